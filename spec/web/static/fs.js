// An in-memory, read-only file system for Go's js/wasm port, which reads files through
// globalThis.fs with Node's callback API (syscall/fs_js.go). The page mounts the model and
// drafter files it fetched (or the files a visitor dropped) under a path, and the engine
// opens them there as it opens files on disk. Writes fail with EROFS; standard output and
// error go to the console, as wasm_exec.js's default does.

const S_IFDIR = 0o040000, S_IFREG = 0o100000;
const O_WRONLY = 1, O_RDWR = 2, O_CREAT = 64, O_EXCL = 128, O_TRUNC = 512, O_APPEND = 1024, O_DIRECTORY = 65536;

function fsError(code) {
  const e = new Error(code);
  e.code = code;
  return e;
}

function normalize(path) {
  const out = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') out.pop(); else out.push(part);
  }
  return '/' + out.join('/');
}

export class MemFS {
  constructor() {
    this.files = new Map(); // path -> Uint8Array
    this.dirs = new Set(['/']);
    this.fds = new Map();
    this.nextFd = 100;
    this.out = {1: '', 2: ''};
    this.decoder = new TextDecoder();
    this.constants = {O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_APPEND, O_EXCL, O_DIRECTORY};
  }

  // mount puts data (a Uint8Array) at path, making its folders.
  mount(path, data) {
    path = normalize(path);
    this.files.set(path, data);
    for (let d = path; d !== '/';) {
      d = d.slice(0, d.lastIndexOf('/')) || '/';
      this.dirs.add(d);
    }
  }

  // unmount drops every file under prefix (a folder).
  unmount(prefix) {
    prefix = normalize(prefix);
    for (const p of [...this.files.keys()]) if (p === prefix || p.startsWith(prefix + '/')) this.files.delete(p);
    for (const d of [...this.dirs]) if (d === prefix || d.startsWith(prefix + '/')) this.dirs.delete(d);
  }

  stats(path) {
    const f = this.files.get(path);
    if (f === undefined && !this.dirs.has(path)) return null;
    const dir = f === undefined, size = dir ? 0 : f.length, now = Date.now();
    return {dev: 1, ino: 0, mode: dir ? S_IFDIR | 0o755 : S_IFREG | 0o444, nlink: 1, uid: 0, gid: 0, rdev: 0,
      size, blksize: 4096, blocks: Math.ceil(size / 512), atimeMs: now, mtimeMs: now, ctimeMs: now,
      isDirectory: () => dir};
  }

  // Node's callback API, as syscall/fs_js.go calls it.
  open(path, flags, mode, cb) {
    path = normalize(path);
    if (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND)) return cb(fsError(this.stats(path) ? 'EROFS' : 'ENOENT'));
    if (!this.stats(path)) return cb(fsError('ENOENT'));
    if ((flags & O_DIRECTORY) && !this.dirs.has(path)) return cb(fsError('ENOTDIR'));
    const fd = this.nextFd++;
    this.fds.set(fd, {path, pos: 0});
    cb(null, fd);
  }
  close(fd, cb) { this.fds.delete(fd) ? cb(null) : cb(fsError('EBADF')); }
  stat(path, cb) { const s = this.stats(normalize(path)); s ? cb(null, s) : cb(fsError('ENOENT')); }
  lstat(path, cb) { this.stat(path, cb); }
  fstat(fd, cb) { const f = this.fds.get(fd); f ? cb(null, this.stats(f.path)) : cb(fsError('EBADF')); }
  readdir(path, cb) {
    path = normalize(path);
    if (!this.dirs.has(path)) return cb(fsError('ENOTDIR'));
    const pre = path === '/' ? '/' : path + '/', names = new Set();
    for (const p of [...this.files.keys(), ...this.dirs]) {
      if (p.startsWith(pre) && p.length > pre.length) names.add(p.slice(pre.length).split('/')[0]);
    }
    cb(null, [...names].sort());
  }
  read(fd, buf, offset, length, position, cb) {
    const f = this.fds.get(fd);
    if (!f) return cb(fsError('EBADF'));
    const data = this.files.get(f.path);
    if (data === undefined) return cb(fsError('EISDIR'));
    const at = position === null || position === undefined ? f.pos : position;
    const n = Math.max(0, Math.min(length, data.length - at));
    buf.set(data.subarray(at, at + n), offset);
    if (position === null || position === undefined) f.pos += n;
    cb(null, n);
  }
  writeSync(fd, buf) {
    if (fd !== 1 && fd !== 2) throw fsError('EBADF');
    this.out[fd] += this.decoder.decode(buf);
    const nl = this.out[fd].lastIndexOf('\n');
    if (nl !== -1) {
      (fd === 2 ? console.warn : console.log)(this.out[fd].substring(0, nl));
      this.out[fd] = this.out[fd].substring(nl + 1);
    }
    return buf.length;
  }
  write(fd, buf, offset, length, position, cb) {
    if ((fd !== 1 && fd !== 2) || offset !== 0 || length !== buf.length || position !== null) return cb(fsError('EROFS'));
    cb(null, this.writeSync(fd, buf));
  }
  fsync(fd, cb) { cb(null); }
}

for (const name of ['chmod', 'chown', 'fchmod', 'fchown', 'ftruncate', 'lchown', 'link', 'mkdir', 'readlink', 'rename',
  'rmdir', 'symlink', 'truncate', 'unlink', 'utimes']) {
  MemFS.prototype[name] = function (...args) { args[args.length - 1](fsError('EROFS')); };
}

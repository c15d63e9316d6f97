// A stand-in for Windows' bcryptprimitives.dll, for the wine smoke test in .ci/run only.
// Go >= 1.24 takes its randomness from ProcessPrng in bcryptprimitives.dll, which it loads from
// system32 at start-up; Debian bookworm's wine 8.0 has no such DLL, so wspec.exe dies before
// main ("bcryptprimitives.dll not found"). This forwards to BCryptGenRandom, which wine has.
// It goes into the throwaway wine prefix's system32, never into the repository's outputs.
#include <windows.h>
#include <bcrypt.h>

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T n) {
  return BCryptGenRandom(NULL, data, (ULONG)n, BCRYPT_USE_SYSTEM_PREFERRED_RNG) == 0;
}

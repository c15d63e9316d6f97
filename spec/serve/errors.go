package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
)

// apiError is an error a client gets as OpenAI's error object,
// {"error": {"message", "type", "param", "code"}}, with an HTTP status.
type apiError struct {
	Status  int
	Message string
	Type    string // invalid_request_error, authentication_error, not_found_error, server_error
	Param   string // the request field at fault ("" is null)
	Code    string // a short machine-readable reason ("" is null)
}

func (e *apiError) Error() string {
	if e.Param != "" {
		return fmt.Sprintf("%d %s (%s): %s", e.Status, e.Type, e.Param, e.Message)
	}
	return fmt.Sprintf("%d %s: %s", e.Status, e.Type, e.Message)
}

// Error codes (the "code" of the error object).
const (
	codeInvalidJSON        = "invalid_json"
	codeInvalidType        = "invalid_type"
	codeInvalidValue       = "invalid_value"
	codeMissing            = "missing_required_parameter"
	codeUnsupported        = "unsupported_parameter"
	codeModelNotFound      = "model_not_found"
	codeContextLength      = "context_length_exceeded"
	codeTooLarge           = "request_too_large"
	codeInvalidAPIKey      = "invalid_api_key"
	codeShuttingDown       = "server_shutting_down"
	codeTooManyConnections = "too_many_connections"
	codeBodyTimeout        = "request_timeout"
	codeInternal           = "internal_error"
	codeNotFound           = "not_found"
	codeMethodNotAllowd    = "method_not_allowed"
)

// invalid is a 400 invalid_request_error about param.
func invalid(param, code, format string, a ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: param, Code: code,
		Message: fmt.Sprintf(format, a...)}
}

// errorBody is the JSON shape of an error reply; param and code are null when empty.
type errorBody struct {
	Error errorObject `json:"error"`
}

type errorObject struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) body() errorBody {
	o := errorObject{Message: e.Message, Type: e.Type}
	if e.Param != "" {
		o.Param = &e.Param
	}
	if e.Code != "" {
		o.Code = &e.Code
	}
	return errorBody{o}
}

// writeError replies err as an error object: an *apiError as itself, anything else as a 500
// whose text is logged, not sent.
func writeError(w http.ResponseWriter, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		log.Printf("serve: internal error: %v", err)
		ae = &apiError{Status: http.StatusInternalServerError, Type: "server_error", Code: codeInternal,
			Message: "the server failed to handle the request"}
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if ae.Status < 500 || ae.Code == codeShuttingDown {
		h.Set("x-should-retry", "false") // openai-go would retry a 5xx; a 4xx or a drain will not change
	}
	w.WriteHeader(ae.Status)
	json.NewEncoder(w).Encode(ae.body())
}

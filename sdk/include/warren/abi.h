/* The binary contract between the Warren host and a plugin `.so`.
 *
 * Only plain C crosses the boundary: no std::string, no exceptions, no vtables. The C++ SDK
 * (handler.h, message.h, context.h, plugin.h) is header-only and compiled into the plugin, so a
 * plugin built by another compiler or standard library still talks to the host correctly.
 *
 * Evolution rules (as OBS does for its module structs):
 *  - every struct starts with `struct_size`; fields are only ever appended;
 *  - appending fields, or giving a new meaning to values old readers would misread, bumps
 *    WARREN_ABI_MINOR; anything else bumps WARREN_ABI_MAJOR;
 *  - the host refuses a plugin whose major differs or whose minor is newer than its own, and
 *    keeps loading older minors: it reads only the fields a struct's `struct_size` covers;
 *  - a plugin calls a host callback appended after 1.0 only when WARREN_HOST_HAS(member) says
 *    the host's table carries it (warren/detail/abi_sizes.h).
 *
 * History:
 *  1.0  the first ABI.
 *  1.1  a thrown warren::PermanentError is reported as WARREN_OUTCOME_DEAD_LETTER with
 *       error_kind WARREN_ERROR_PERMANENT: "dead-letter" is one outcome kind, and error_kind
 *       says whether the handler got there by returning or by throwing. 1.0 plugins report
 *       WARREN_OUTCOME_THREW_PERMANENT instead; the host treats both the same.
 *  1.2  (SDK 1.2) log levels WARREN_LOG_DEBUG and WARREN_LOG_TRACE, and plugin_log_enabled to
 *       ask whether a level is written (a plugin sends the new levels only to a host that has
 *       plugin_log_enabled: an older one would read them as warnings); labelled plugin metrics
 *       (plugin_labelled_metric, metric_series); warren_publish_request.flags, with
 *       WARREN_PUBLISH_NOT_MANDATORY.
 */
#ifndef WARREN_ABI_H_
#define WARREN_ABI_H_

#include <stddef.h>
#include <stdint.h>

#define WARREN_ABI_MAJOR 1
#define WARREN_ABI_MINOR 2

/* The one symbol a plugin exports. */
#define WARREN_PLUGIN_ENTRY_SYMBOL "warren_plugin_entry"

#ifdef __cplusplus
extern "C" {
#endif

/* A borrowed, not NUL-terminated string. Its owner and lifetime are stated where it is used. */
typedef struct warren_str {
  const char* data;
  size_t size;
} warren_str;

/* Numbered in the order they were added, not by severity. DEBUG and TRACE exist since 1.2: a
 * plugin sends them only to a host whose table has plugin_log_enabled. */
typedef enum warren_log_level {
  WARREN_LOG_INFO = 1,
  WARREN_LOG_WARN = 2,
  WARREN_LOG_ERROR = 3,
  WARREN_LOG_DEBUG = 4,
  WARREN_LOG_TRACE = 5
} warren_log_level;

typedef enum warren_outcome_kind {
  WARREN_OUTCOME_ACK = 1,
  WARREN_OUTCOME_RETRY = 2,
  /* Dead-lettered at once: returned Outcome::dead_letter (error_kind NONE) or threw
   * warren::PermanentError (error_kind PERMANENT, since 1.1). */
  WARREN_OUTCOME_DEAD_LETTER = 3,
  /* The handler threw anything but warren::PermanentError: retried under the worker's policy. */
  WARREN_OUTCOME_THREW = 4,
  /* ABI 1.0 only: the handler threw warren::PermanentError. 1.1 plugins report
   * WARREN_OUTCOME_DEAD_LETTER with WARREN_ERROR_PERMANENT; hosts accept both. */
  WARREN_OUTCOME_THREW_PERMANENT = 5
} warren_outcome_kind;

typedef enum warren_error_kind {
  WARREN_ERROR_NONE = 0,
  WARREN_ERROR_STD_EXCEPTION = 1,
  WARREN_ERROR_PERMANENT = 2,
  WARREN_ERROR_UNKNOWN = 3
} warren_error_kind;

/* What a handler decided about one message. Reported once per `handle` call through
 * warren_host_api.message_report; the host copies every string before that call returns. */
typedef struct warren_outcome {
  uint32_t struct_size;
  uint32_t kind;         /* warren_outcome_kind */
  int64_t delay_ms;      /* RETRY only: the delay asked for, or -1 for the worker's policy */
  warren_str reason;     /* DEAD_LETTER: the reason; thrown: the exception's what() */
  uint32_t error_kind;   /* warren_error_kind: how the handler got there (NONE: it returned) */
  warren_str error_type; /* thrown: the exception's mangled type name (the host demangles) */
} warren_outcome;

/* One delivery as the plugin sees it. Every string is owned by the host and valid until
 * `handle` returns. */
typedef struct warren_message {
  uint32_t struct_size;
  warren_str body;
  warren_str routing_key;
  warren_str exchange;
  warren_str message_id;
  warren_str content_type;
  uint32_t attempt; /* 1-based */
  uint32_t redelivered;
} warren_message;

/* A publish asked for by a handler. Strings are borrowed for the duration of the call. */
typedef struct warren_publish_request {
  uint32_t struct_size;
  warren_str exchange;
  warren_str routing_key;
  warren_str body;
  warren_str content_type; /* empty: application/octet-stream */
  warren_str message_id;   /* empty: the host generates one */
  const warren_str* header_names;
  const warren_str* header_values;
  size_t header_count;
  /* Since 1.2 (read only when struct_size covers it): warren_publish_flags bits. Zero, as in a
   * zero-initialized request, is what older plugins get: a mandatory publish. */
  uint32_t flags;
} warren_publish_request;

/* warren_publish_request.flags (since 1.2). */
typedef enum warren_publish_flags {
  /* A message no queue is bound for is dropped by the broker and the publish succeeds once
   * confirmed. Without it, such a publish fails (returned unroutable). */
  WARREN_PUBLISH_NOT_MANDATORY = 1
} warren_publish_flags;

typedef enum warren_metric_type {
  WARREN_METRIC_COUNTER = 1,
  WARREN_METRIC_HISTOGRAM = 2,
  WARREN_METRIC_GAUGE = 3
} warren_metric_type;

typedef void (*warren_scope_destroy_fn)(void* scope);

/* Services the host offers. `host_plugin` is the worker-level handle given to `create`;
 * `host_message` is the per-message handle given to `handle`. All functions are thread-safe
 * and never throw. */
typedef struct warren_host_api {
  uint32_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;

  /* Worker level (PluginContext). */
  void (*plugin_log)(void* host_plugin, uint32_t level, warren_str text);
  /* 1 and *value set (valid as long as the worker lives) when the setting exists, else 0. */
  int (*plugin_setting)(void* host_plugin, warren_str key, warren_str* value);
  warren_str (*plugin_worker_name)(void* host_plugin);
  /* A metric named warren_plugin_<name>, labelled with the worker and plugin. Returns NULL
   * (and logs why) when the name is invalid or already registered with another type. The handle
   * lives as long as the worker. */
  void* (*plugin_metric)(void* host_plugin, uint32_t type, warren_str name, warren_str help,
                         const double* buckets, size_t bucket_count);
  /* Counter: add; histogram: observe; gauge: set. */
  void (*metric_record)(void* metric, double value);

  /* Message level (Context). */
  void (*message_log)(void* host_message, uint32_t level, warren_str text);
  /* 1 and *value set (valid until `handle` returns) when the header exists, else 0. */
  int (*message_header)(void* host_message, warren_str name, warren_str* value);
  int (*message_stop_requested)(void* host_message);
  /* The message's scope: the plugin stores one object here and the host calls `destroy` on it
   * when the message is settled (after its last attempt in this process). */
  void* (*message_scope)(void* host_message);
  void (*message_set_scope)(void* host_message, void* scope, warren_scope_destroy_fn destroy);
  /* Publishes with a broker confirm. 0 on success; otherwise writes a NUL-terminated reason to
   * `error` (at most error_capacity bytes) and returns non-zero. */
  int (*message_publish)(void* host_message, const warren_publish_request* request, char* error,
                         size_t error_capacity);
  void (*message_report)(void* host_message, const warren_outcome* outcome);

  /* Since 1.2 (check with WARREN_HOST_HAS). */
  /* 1 when the host writes lines of this level (a warren_log_level) now, else 0: a plugin skips
   * composing lines nobody reads. The host understands WARREN_LOG_DEBUG and WARREN_LOG_TRACE
   * exactly when its table has this callback. */
  int (*plugin_log_enabled)(void* host_plugin, uint32_t level);
  /* Like plugin_metric, with label names (label_count of them, borrowed for the call) whose
   * values are given per update through metric_series. metric_record on the handle itself
   * records nothing. */
  void* (*plugin_labelled_metric)(void* host_plugin, uint32_t type, warren_str name,
                                  warren_str help, const double* buckets, size_t bucket_count,
                                  const warren_str* label_names, size_t label_count);
  /* The series of a labelled metric for these values (one per label name, in order; borrowed
   * for the call), created on first use, for metric_record. Past the host's bound on series per
   * metric, the overflow series (every value "__overflow__"). NULL for a NULL or unlabelled
   * metric or a wrong count. The handle lives as long as the worker. */
  void* (*metric_series)(void* metric, const warren_str* label_values, size_t label_count);
} warren_host_api;

/* The constant description a plugin exports through warren_plugin_entry(). */
typedef struct warren_plugin_descriptor {
  uint32_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  const char* name;
  const char* version;
  const char* build_fingerprint; /* compiler, -std and _GLIBCXX_USE_CXX11_ABI; informational */

  /* Creates the worker's handler instance. NULL on failure, with a NUL-terminated reason in
   * `error`. */
  void* (*create)(const warren_host_api* host, void* host_plugin, char* error,
                  size_t error_capacity);
  void (*destroy)(void* instance);
  /* Runs the handler once and reports exactly one outcome through host->message_report. */
  void (*handle)(void* instance, const warren_message* message, void* host_message);
} warren_plugin_descriptor;

typedef const warren_plugin_descriptor* (*warren_plugin_entry_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* WARREN_ABI_H_ */

/* Talking to a real Jupyter server over its Unix socket with its token,
 * as the access proxy will: status, contents, kernels, and running code
 * on a kernel over its WebSocket channels. Every call waits at most 30 s. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* Where requests go: straight to a server's socket with its token, or
 * through the access proxy (127.0.0.1:@proxy_port, Host @host) with a
 * session cookie. */
typedef struct {
    const char *socket_path;
    const char *token;
    guint proxy_port;
    const char *host;
    const char *cookie;
} EinsoraTestJupyterVia;

guint einsora_test_jupyter_request_via(const EinsoraTestJupyterVia *via, const char *method,
                                       const char *path, const char *body, gchar **response,
                                       GHashTable **headers);
gchar *einsora_test_jupyter_execute_via(const EinsoraTestJupyterVia *via, const char *kernel_id,
                                        const char *code);

/* The HTTP status of @method @path (0 when the socket doesn't answer);
 * @body (JSON) may be NULL. The answer's body goes to @response if set. */
guint einsora_test_jupyter_request(const char *socket_path, const char *token, const char *method,
                                   const char *path, const char *body, gchar **response);
/* Starts a kernel; returns its ID. */
gchar *einsora_test_jupyter_start_kernel(const char *socket_path, const char *token);
/* Runs @code on the kernel and returns what it printed on stdout. */
gchar *einsora_test_jupyter_execute(const char *socket_path, const char *token,
                                    const char *kernel_id, const char *code);

/* Sends @code to the kernel and returns without waiting for its answer
 * (code that never answers, such as code that kills its server). */
void einsora_test_jupyter_send_code(const char *socket_path, const char *token,
                                    const char *kernel_id, const char *code);

/* A server's process as the supervisor's state file in @run_dir records
 * it: its PID (0 when there is no state file) and start time. */
int einsora_test_recorded_pid(const char *run_dir, const char *id, guint64 *start_time);
/* Kills every process group a state file in @run_dir names: nothing a
 * failed test started outlives it. */
void einsora_test_kill_recorded(const char *run_dir);

/* The token a notebook server was started with, read from its process's
 * environment (/proc/PID/environ: only its user can read it). */
gchar *einsora_test_jupyter_token_of(int pid);
/* Every live (non-zombie) process under @pid, @pid included. */
GArray *einsora_test_process_tree(int pid);
gboolean einsora_test_process_alive(int pid);
/* /proc/PID/stat field 22; 0 when there is no such process. */
guint64 einsora_test_process_start_time(int pid);

G_END_DECLS

#!/usr/bin/env python3
"""An OpenAI client's view of a running endpoint through the access proxy,
for tests/einsora-endpoint-e2e-test.c: every route, streamed and not, with
the caller's API token; the refusals (no token, a cookie alone, another
tenant's token, a route that isn't served, bad input). Python's own
http.client, no OpenAI library. Exits non-zero at the first check that
fails; every answer's status, headers and body go to TRANSCRIPT, so the
test can look for secrets in them.

    endpoint-client.py BASE_URL TENANT_URL NAME MODEL TOKEN OTHER_TOKEN COOKIE TRANSCRIPT

BASE_URL is the endpoint's own (the access grant's), TENANT_URL the
tenant-wide one where "model" picks the endpoint, NAME the endpoint's
name and MODEL the model it serves (either picks it there), COOKIE a browser session cookie ("name=value") of the daemon's."""
import http.client
import json
import sys
import urllib.parse

base_url, tenant_url, model, served_model, token, other_token, cookie, transcript_path = \
    sys.argv[1:9]
transcript = open(transcript_path, "w", encoding="utf-8")
# llama.cpp's SPM vocabulary: 0-2 are unk, bos and eos, 3-258 bytes. With
# all banned, random weights answer exactly max_tokens of whole words.
BAN = {str(token_id): -100 for token_id in range(0, 259)}
checks = 0


def fail(message):
    print("endpoint-client.py: " + message, file=sys.stderr)
    sys.exit(1)


def check(condition, message):
    global checks
    checks += 1
    if not condition:
        fail(message)


def connect(url):
    parts = urllib.parse.urlsplit(url)
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=120), parts.path


def record(method, path, response, body):
    transcript.write("%s %s -> %d\n" % (method, path, response.status))
    for name, value in response.getheaders():
        transcript.write("%s: %s\n" % (name, value))
    transcript.write(body.decode("utf-8", "replace") + "\n\n")


def call(url, method, route, body=None, bearer=token, headers=None, raw=None):
    connection, prefix = connect(url)
    sent = dict(headers or {})
    if bearer is not None:
        sent["Authorization"] = "Bearer " + bearer
    data = raw
    if body is not None:
        data = json.dumps(body).encode()
    if data is not None:
        sent.setdefault("Content-Type", "application/json")
    connection.request(method, prefix + route, body=data, headers=sent)
    response = connection.getresponse()
    payload = response.read()
    record(method, prefix + route, response, payload)
    connection.close()
    try:
        parsed = json.loads(payload)
    except ValueError:
        parsed = None
    return response, parsed


def check_openai_error(response, parsed, status, what):
    check(response.status == status, "%s: %d, not %d" % (what, response.status, status))
    check(isinstance(parsed, dict) and isinstance(parsed.get("error"), dict)
          and isinstance(parsed["error"].get("message"), str),
          "%s: no OpenAI error object: %r" % (what, parsed))
    check(response.getheader("X-Request-ID"), "%s: no X-Request-ID" % what)


def check_endpoint_headers(response, what):
    check(response.getheader("X-Request-ID"), "%s: no X-Request-ID" % what)
    check(response.getheader("X-Einsora-Region") == "local",
          "%s: region %r" % (what, response.getheader("X-Einsora-Region")))
    check(response.getheader("X-Einsora-Class") == "cpu-2c-4g",
          "%s: class %r" % (what, response.getheader("X-Einsora-Class")))
    check(response.getheader("X-Einsora-Fallback") == "false",
          "%s: fallback %r" % (what, response.getheader("X-Einsora-Fallback")))


def stream_chat(url, body_model):
    """A streamed chat answer, read event by event as it arrives."""
    connection, prefix = connect(url)
    body = {"messages": [{"role": "user", "content": "Tell me a story"}], "max_tokens": 12,
            "stream": True, "stream_options": {"include_usage": True}, "logit_bias": BAN}
    if body_model is not None:
        body["model"] = body_model
    connection.request("POST", prefix + "/chat/completions", body=json.dumps(body).encode(),
                       headers={"Authorization": "Bearer " + token,
                                "Content-Type": "application/json",
                                "X-Request-ID": "client-chosen-42"})
    response = connection.getresponse()
    check(response.status == 200, "stream: %d" % response.status)
    check(response.getheader("Content-Type", "").startswith("text/event-stream"),
          "stream: Content-Type %r" % response.getheader("Content-Type"))
    check(response.getheader("X-Request-ID") == "client-chosen-42",
          "stream: the client's X-Request-ID isn't kept: %r" % response.getheader("X-Request-ID"))
    check_endpoint_headers(response, "stream")
    pieces, usage, done, lines = [], None, False, []
    while True:
        line = response.readline()
        if not line:
            break
        lines.append(line)
        line = line.decode().rstrip("\r\n")
        if not line.startswith("data: "):
            continue
        data = line[len("data: "):]
        if data == "[DONE]":
            done = True
            continue
        chunk = json.loads(data)
        for choice in chunk.get("choices", []):
            content = choice.get("delta", {}).get("content")
            if content:
                pieces.append(content)
        if chunk.get("usage"):
            usage = chunk["usage"]
    record("POST", prefix + "/chat/completions (stream)", response, b"".join(lines))
    connection.close()
    check(done, "stream: no [DONE]")
    check(len(pieces) >= 2, "stream: %d pieces" % len(pieces))
    check(usage is not None and usage.get("completion_tokens") == 12,
          "stream: include_usage gave %r" % usage)
    return "".join(pieces)


# The endpoint's own base URL, every route.
response, parsed = call(base_url, "GET", "/models")
check(response.status == 200, "GET /models: %d" % response.status)
check_endpoint_headers(response, "GET /models")
check(parsed.get("object") == "list" and any(m.get("id") for m in parsed.get("data", [])),
      "GET /models: %r" % parsed)

response, parsed = call(base_url, "POST", "/completions",
                        {"prompt": "Once upon a time", "max_tokens": 8, "logit_bias": BAN})
check(response.status == 200, "POST /completions: %d" % response.status)
check_endpoint_headers(response, "POST /completions")
check(isinstance(parsed["choices"][0]["text"], str), "POST /completions: %r" % parsed)
check(parsed["usage"]["completion_tokens"] == 8, "POST /completions: usage %r" % parsed["usage"])

response, parsed = call(base_url, "POST", "/chat/completions",
                        {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8,
                         "logit_bias": BAN})
check(response.status == 200, "POST /chat/completions: %d" % response.status)
check(parsed["choices"][0]["message"]["role"] == "assistant", "chat: %r" % parsed)
check(parsed["usage"]["completion_tokens"] == 8, "chat: usage %r" % parsed["usage"])

stream_chat(base_url, None)

# Embeddings reach the worker, which serves them only for an embedding
# model: this generative one says so in OpenAI's shape.
response, parsed = call(base_url, "POST", "/embeddings", {"input": "hello"})
check(response.status != 404 and response.status >= 400 and isinstance(parsed.get("error"), dict),
      "POST /embeddings: %d %r" % (response.status, parsed))

# The tenant-wide base URL: the model names the endpoint.
response, parsed = call(tenant_url, "GET", "/models")
check(response.status == 200, "tenant GET /models: %d" % response.status)
check(any(m.get("id") == model for m in parsed.get("data", [])),
      "tenant GET /models lacks %s: %r" % (model, parsed))
response, parsed = call(tenant_url, "POST", "/chat/completions",
                        {"model": model, "messages": [{"role": "user", "content": "Hi"}],
                         "max_tokens": 4, "logit_bias": BAN})
check(response.status == 200, "tenant chat: %d %r" % (response.status, parsed))
check_endpoint_headers(response, "tenant chat")
stream_chat(tenant_url, model)
# Or by the model it serves, as in Ollama.
response, parsed = call(tenant_url, "POST", "/chat/completions",
                        {"model": served_model, "messages": [{"role": "user", "content": "Hi"}],
                         "max_tokens": 4, "logit_bias": BAN})
check(response.status == 200, "tenant chat by the model's name: %d %r" % (response.status, parsed))
check_endpoint_headers(response, "tenant chat by the model's name")
response, parsed = call(tenant_url, "POST", "/chat/completions",
                        {"model": "no-such-model", "messages": [{"role": "user", "content": "x"}]})
check_openai_error(response, parsed, 404, "tenant chat, unknown model")

# Refusals.
response, parsed = call(base_url, "GET", "/models", bearer=None)
check_openai_error(response, parsed, 401, "no token")
response, parsed = call(base_url, "GET", "/models", bearer=None, headers={"Cookie": cookie})
check_openai_error(response, parsed, 401, "a cookie alone")
response, parsed = call(base_url, "GET", "/models", bearer="einsora_not_a_token")
check_openai_error(response, parsed, 401, "a wrong token")
response, parsed = call(base_url, "GET", "/models", bearer=other_token)
check_openai_error(response, parsed, 404, "another tenant's token")
response, parsed = call(tenant_url, "POST", "/chat/completions",
                        {"model": model, "messages": [{"role": "user", "content": "x"}]},
                        bearer=other_token)
check_openai_error(response, parsed, 404, "another tenant's token, tenant-wide")
for route in ("/props", "/tokenize", "/slots", "/metrics"):
    response, parsed = call(base_url, "POST" if route == "/tokenize" else "GET", route,
                            body={"content": "x"} if route == "/tokenize" else None)
    check_openai_error(response, parsed, 404, "%s (not an inference route)" % route)
# A way out of the base URL by dot segments is refused by the HTTP edge.
response, parsed = call(base_url, "GET", "/../../health")
check(400 <= response.status < 500, "/../../health is served: %d" % response.status)
response, parsed = call(base_url, "POST", "/chat/completions", raw=b"{not json")
check_openai_error(response, parsed, 400, "malformed JSON")

print("endpoint-client.py: %d checks passed" % checks)

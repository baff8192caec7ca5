#!/usr/bin/env python3
"""Client-compatibility check: the official `openai` package against aiperf-mock-server.

Usage: openai_client.py BASE_URL   (e.g. http://127.0.0.1:8000/v1)

Makes streaming and non-streaming chat and completions calls and checks content, token
counts (each output word is one token), usage numbers and finish reasons. Exits non-zero with
a message naming every difference.
"""
import sys

import openai

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print(f"FAIL: {what}", file=sys.stderr)


def words(text):
    return len(text.split())


def chat_non_streaming(client):
    r = client.chat.completions.create(
        model="mock-model",
        messages=[{"role": "user", "content": "Say something nice about the weather"}],
        max_completion_tokens=24,
    )
    c = r.choices[0]
    check(r.object == "chat.completion", f"chat object is {r.object!r}")
    check(r.id.startswith("chatcmpl-"), f"chat id {r.id!r}")
    check(c.message.role == "assistant", f"role {c.message.role!r}")
    check(bool(c.message.content), "chat content is empty")
    check(words(c.message.content or "") == 24, f"chat content has {words(c.message.content or '')} words, want 24")
    check(c.finish_reason == "length", f"chat finish_reason {c.finish_reason!r}")
    u = r.usage
    check(u is not None and u.completion_tokens == 24, f"chat usage.completion_tokens {u and u.completion_tokens}")
    check(u is not None and u.prompt_tokens == 6, f"chat usage.prompt_tokens {u and u.prompt_tokens} (6 words)")
    check(u is not None and u.total_tokens == u.prompt_tokens + u.completion_tokens, "chat usage.total_tokens")


def chat_default_length(client):
    r = client.chat.completions.create(model="mock-model", messages=[{"role": "user", "content": "hi"}])
    c = r.choices[0]
    check(c.finish_reason == "stop", f"chat (no max) finish_reason {c.finish_reason!r}")
    check(words(c.message.content or "") == r.usage.completion_tokens, "chat (no max) usage disagrees with content")


def chat_streaming(client):
    stream = client.chat.completions.create(
        model="mock-model",
        messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "tell me a story"}],
        max_tokens=40,
        stream=True,
        stream_options={"include_usage": True},
    )
    content, finish, usage, chunks, roles = "", None, None, 0, []
    for chunk in stream:
        chunks += 1
        check(chunk.object == "chat.completion.chunk", f"chunk object {chunk.object!r}")
        if chunk.usage is not None:
            usage = chunk.usage
            check(chunk.choices == [], "usage chunk must have no choices")
        for ch in chunk.choices:
            if ch.delta.role:
                roles.append(ch.delta.role)
            content += ch.delta.content or ""
            if ch.finish_reason:
                finish = ch.finish_reason
    check(roles == ["assistant"], f"roles seen {roles}")
    check(words(content) == 40, f"streamed chat has {words(content)} words, want 40")
    check(finish == "length", f"streamed chat finish_reason {finish!r}")
    check(usage is not None, "no usage chunk although include_usage was set")
    if usage is not None:
        check(usage.completion_tokens == 40, f"streamed usage.completion_tokens {usage.completion_tokens}")
        check(usage.prompt_tokens == 6, f"streamed usage.prompt_tokens {usage.prompt_tokens} (6 words)")
        check(usage.total_tokens == 46, f"streamed usage.total_tokens {usage.total_tokens}")
    check(chunks == 1 + 40 + 1, f"{chunks} chunks, want role + 40 + usage")


def chat_streaming_reasoning(client):
    stream = client.chat.completions.create(
        model="Qwen/Qwen3-0.6B",
        messages=[{"role": "user", "content": "think"}],
        max_tokens=60,
        reasoning_effort="low",
        stream=True,
        stream_options={"include_usage": True},
    )
    reasoning, content, usage = "", "", None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for ch in chunk.choices:
            content += ch.delta.content or ""
            reasoning += getattr(ch.delta, "reasoning_content", None) or ""
    check(words(reasoning) == 30, f"reasoning has {words(reasoning)} words, want 30 (half of 60)")
    check(words(content) == 30, f"content after reasoning has {words(content)} words, want 30")
    check(usage is not None and usage.completion_tokens == 60, "reasoning usage.completion_tokens")
    details = usage and usage.completion_tokens_details
    check(details is not None and details.reasoning_tokens == 30, f"reasoning_tokens {details}")


def completions(client):
    r = client.completions.create(model="mock-model", prompt="Once upon a time", max_tokens=12)
    c = r.choices[0]
    check(r.object == "text_completion", f"completion object {r.object!r}")
    check(words(c.text) == 12, f"completion has {words(c.text)} words, want 12")
    check(c.finish_reason == "length", f"completion finish_reason {c.finish_reason!r}")
    check(r.usage.prompt_tokens == 4 and r.usage.completion_tokens == 12, f"completion usage {r.usage}")

    stream = client.completions.create(
        model="mock-model", prompt="Once upon a time", max_tokens=15, stream=True,
        stream_options={"include_usage": True},
    )
    text, finish, usage = "", None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for ch in chunk.choices:
            text += ch.text
            finish = ch.finish_reason or finish
    check(words(text) == 15, f"streamed completion has {words(text)} words, want 15")
    check(finish == "length", f"streamed completion finish_reason {finish!r}")
    check(usage is not None and usage.completion_tokens == 15 and usage.prompt_tokens == 4, f"streamed completion usage {usage}")


def errors(client):
    try:
        client.chat.completions.create(model="mock-model", messages=[{"role": "user", "content": "x"}], max_tokens=0)
        check(False, "max_tokens=0 was accepted")
    except openai.BadRequestError as e:
        check(e.status_code == 400, f"status {e.status_code}")
        body = e.body if isinstance(e.body, dict) else {}
        check("max_tokens" in str(body.get("message", "")), f"400 body {e.body!r}")


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    client = openai.OpenAI(base_url=sys.argv[1], api_key="test", max_retries=0, timeout=30)
    for test in (chat_non_streaming, chat_default_length, chat_streaming, chat_streaming_reasoning, completions, errors):
        try:
            test(client)
            print(f"ok   {test.__name__}")
        except Exception as e:  # noqa: BLE001 - report any client-side failure as a difference
            FAILURES.append(f"{test.__name__} raised {type(e).__name__}: {e}")
            print(f"FAIL {test.__name__}: {type(e).__name__}: {e}", file=sys.stderr)
    if FAILURES:
        print(f"\n{len(FAILURES)} difference(s) between the openai client's view and the expected output:", file=sys.stderr)
        for f in FAILURES:
            print(f"  - {f}", file=sys.stderr)
        return 1
    print(f"all checks passed (openai {openai.__version__})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

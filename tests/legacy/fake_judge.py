"""A local OpenAI-compatible judge for the rubric tests: its answer is chosen by the model name it is asked for.

``good`` → ``{"score": 0.8, ...}``; ``high`` → score 7 (clamped by the caller); ``fenced`` → the JSON in a code
fence after a ``<think>`` block; ``garbage`` → text that is not JSON; ``noscore`` → JSON without a numeric score;
``empty`` → no content; ``slow`` → answers after 3 s; ``ratelimited`` → 429; ``broken`` → 500; ``missing`` → 404
``model_not_found``. Every request body is kept in ``app.state.requests``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse


def _reply(content: Any, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-judge", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def create_judge_app() -> FastAPI:
    app = FastAPI()
    app.state.requests = []

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Any:
        body = await request.json()
        app.state.requests.append({"body": body, "authorization": request.headers.get("authorization")})
        model = str(body.get("model", "")).rsplit("/", 1)[-1]
        if model == "ratelimited":
            return JSONResponse({"error": {"message": "judge is rate limited", "type": "rate_limit"}},
                                status_code=429, headers={"retry-after-ms": "1", "retry-after": "0"})
        if model == "broken":
            return JSONResponse({"error": {"message": "judge exploded", "type": "server_error"}}, status_code=500)
        if model == "missing":
            return JSONResponse({"error": {"message": f"The model `{model}` does not exist",
                                           "code": "model_not_found", "type": "invalid_request_error"}},
                                status_code=404)
        if model == "slow":
            await asyncio.sleep(3)
        if model == "garbage":
            return _reply("I think this answer is pretty good!", model)
        if model == "noscore":
            return _reply(json.dumps({"score": "high", "explanation": "x"}), model)
        if model == "empty":
            return _reply(None, model)
        if model == "high":
            return _reply(json.dumps({"score": 7, "explanation": "way above"}), model)
        if model == "fenced":
            return _reply('<think>hmm</think>\n```json\n{"score": 0.25, "explanation": "fenced"}\n```', model)
        return _reply(json.dumps({"score": 0.8, "explanation": "mentions Paris"}), model)

    return app

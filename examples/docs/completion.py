"""The example of docs/completion.md: completing a prompt argument and a template variable.

Run it as a stdio server (``python examples/docs/completion.py``), or watch a client use it
in memory (``python examples/docs/completion.py --demo``).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

import trio

from trimcp.server import Server
from trimcp.types import PromptReference, ResourceTemplateReference

app = Server("code")
REPOS = {"python": ["trio", "cpython", "typeshed"], "rust": ["tokio", "serde"]}


@app.prompt()
def explain(language: str, topic: str) -> str:
    return f"Explain {topic} in {language}."


@app.resource("repo://{owner}/{name}")
def repo(owner: str, name: str) -> str:
    return f"The {owner}/{name} repository."


@app.complete_argument(prompt="explain", argument="language")
def languages(value: str) -> list[str]:
    return [language for language in REPOS if language.startswith(value)]


@app.complete_argument(template="repo://{owner}/{name}", argument="name")
def repo_names(value: str, arguments: Mapping[str, str]) -> list[str]:
    names = REPOS.get(arguments.get("owner", ""), [])
    return [name for name in names if name.startswith(value)]


async def demo() -> None:
    from trimcp.client import connect_memory

    async with connect_memory(app) as client:
        result = await client.complete(PromptReference(name="explain"), "language", "py")
        print(result.completion.values)
        template = ResourceTemplateReference(uri="repo://{owner}/{name}")
        result = await client.complete(template, "name", "t", context_arguments={"owner": "python"})
        print(result.completion.values, result.completion.has_more)


if __name__ == "__main__":
    if "--demo" in sys.argv:
        trio.run(demo)
    else:
        app.run()

"""The example of docs/tools.md: a weather tool with a schema, progress and a tool error.

Run it as a stdio server (``python examples/docs/tools.py``), or watch a client call it in
memory (``python examples/docs/tools.py --demo``).
"""

from __future__ import annotations

import sys
from typing import Annotated

import attrs
import trio

from trimcp.server import Context, Field, Server, ToolError

app = Server("weather", version="1.0.0")


@attrs.frozen
class Forecast:
    city: str
    temperatures: list[float]


@app.tool(annotations={"readOnlyHint": True})
async def forecast(
    city: str,
    days: Annotated[int, Field("How many days", ge=1, le=7)] = 3,
    *,
    ctx: Context,
) -> Forecast:
    """Forecast the temperature of a city.

    Args:
        city: The city name, e.g. "Paris".
    """
    if city.lower() == "atlantis":
        raise ToolError("Atlantis has no weather service; try a real city.")
    temperatures = []
    for day in range(days):
        await ctx.report_progress(day + 1, days)
        temperatures.append(20.0 + day)
    return Forecast(city=city, temperatures=temperatures)


async def demo() -> None:
    from trimcp.client import connect_memory

    async with connect_memory(app) as client:
        (tool,) = (await client.list_tools()).tools
        print(tool.name, tool.input_schema["properties"]["days"])
        result = await client.call_tool("forecast", {"city": "Paris", "days": 2})
        print(result.structured_content)
        result = await client.call_tool("forecast", {"city": "Atlantis"})
        print(result.is_error, result.content[0].text)  # type: ignore[union-attr]
        result = await client.call_tool("forecast", {"city": "Paris", "days": 9})
        print(result.is_error, result.content[0].text)  # type: ignore[union-attr]


if __name__ == "__main__":
    if "--demo" in sys.argv:
        trio.run(demo)
    else:
        app.run()

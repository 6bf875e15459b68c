"""weather.py: a small MCP server (docs/getting-started.md)."""

from trimcp import Context, Server

app = Server("weather", version="1.0.0")


@app.tool()
async def forecast(city: str, days: int = 3, *, ctx: Context) -> list[float]:
    """Forecast the temperature of a city, in degrees Celsius."""
    temperatures = []
    for day in range(days):
        await ctx.report_progress(day + 1, days, f"day {day + 1} of {days}")
        temperatures.append(20.0 + day)
    return temperatures


@app.resource("weather://cities", mime_type="text/plain")
def cities() -> str:
    """The cities this server knows."""
    return "Paris\nOslo\nLima"


@app.prompt()
def plan_trip(city: str) -> str:
    """Plan a trip around the weather."""
    return f"Look at the forecast for {city} and suggest what to pack."


if __name__ == "__main__":
    app.run()  # stdio

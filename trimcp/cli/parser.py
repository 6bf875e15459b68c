"""The ``trimcp`` command line: subcommands, options, and the ``--`` server command."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from trimcp.cli.client import LIST_KINDS, MAX_PROGRESS_TIMEOUT
from trimcp.cli.errors import UsageError
from trimcp.cli.hosts import HOSTS

DESCRIPTION = """\
trimcp: run MCP servers and talk to any MCP server from the shell.

  trimcp run server.py[:app] [--transport stdio|http|ws] [--port N]
  trimcp run --openapi api.json [--base-url URL] [--tool-search]
  trimcp list tools -- python server.py          (any stdio server after --)
  trimcp call add a=1 b=2 --url http://127.0.0.1:8000/mcp
  trimcp skills list -- python server.py         (the skills it serves)
  trimcp config claude server.py
"""

CLIENT_EPILOG = """\
server: either a command after `--` (spawned, stdio) or --url http(s)://... | ws(s)://...
exit codes: 0 ok, 1 failure (server error, tool error, connection), 2 usage, 130 Ctrl-C
"""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error raises :class:`UsageError` instead of exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message, hint=f"see: {self.prog} --help")


def worker_count(text: str) -> int:
    """``--workers``: an integer from 1 to 256."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of workers") from None
    if not 1 <= value <= 256:
        raise argparse.ArgumentTypeError(f"{value} workers: use 1-256")
    return value


def port_number(text: str) -> int:
    """``--port``: an integer from 0 to 65535 (0 picks a free port)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(
            f"{value} is not a port number: use 0-65535 (0 picks a free port)"
        )
    return value


def _client_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", help="the server's URL (http(s):// or ws(s)://)")
    parser.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="an HTTP header for --url (repeatable), e.g. 'Authorization: Bearer ...'",
    )
    parser.add_argument(
        "--auth",
        action="store_true",
        help="log in when the server asks (OAuth: opens your browser; tokens are kept in "
        "$XDG_CACHE_HOME/trimcp/tokens.json)",
    )
    parser.add_argument(
        "--no-browser",
        action="store_true",
        help="with --auth: only print the login URL (then open it yourself)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how long each request waits for its answer, the handshake too (0: no limit; "
        "default 60); a call's progress notifications restart it, never past "
        f"{MAX_PROGRESS_TIMEOUT:g} s from its start (or SECONDS, when more)",
    )
    parser.add_argument(
        "--mode",
        default="auto",
        metavar="MODE",
        help="protocol era: auto (server/discover, else initialize; default), legacy, "
        "or a version such as 2026-07-28 or 2025-11-25",
    )
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="no progress or server log lines on stderr"
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show every message on the wire and the server's stderr",
    )


def build_parser() -> argparse.ArgumentParser:
    from trimcp._version import __version__

    parser = _Parser(
        prog="trimcp", description=DESCRIPTION, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"trimcp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    run = sub.add_parser("run", help="serve a trimcp.Server over stdio, HTTP or WebSocket")
    run.add_argument("target", nargs="?", help="path/to/server.py[:app] or package.module[:app]")
    run.add_argument(
        "--openapi",
        metavar="SPEC",
        help="serve a REST API from its OpenAPI 3.0/3.1 document (a file or URL) instead: one "
        "tool per operation (API credentials: env TRIMCP_OPENAPI_TOKEN, TRIMCP_OPENAPI_HEADERS)",
    )
    run.add_argument(
        "--base-url", metavar="URL", help="with --openapi: the API's URL (default: its servers)"
    )
    run.add_argument(
        "--openapi-skip-unsupported",
        action="store_true",
        help="with --openapi: leave out the operations trimcp cannot serve instead of refusing",
    )
    run.add_argument(
        "--tool-search",
        action="store_true",
        help="list a search tool and a call tool instead of every tool",
    )
    run.add_argument(
        "--transport",
        choices=("stdio", "http", "websocket", "ws"),
        default=None,
        help="default stdio (env TRIMCP_TRANSPORT)",
    )
    run.add_argument(
        "--host", default=None, help="address to bind (default 127.0.0.1; env TRIMCP_HOST)"
    )
    run.add_argument(
        "--port",
        type=port_number,
        default=None,
        help="port (default 8000 for http, 8765 for ws; 0 picks a free one; env TRIMCP_PORT)",
    )
    run.add_argument(
        "--path",
        default=None,
        help="the endpoint path for http and ws (default /mcp; env TRIMCP_PATH)",
    )
    run.add_argument(
        "--stateless",
        action="store_true",
        default=None,
        help="http: no sessions, each POST stands alone (env TRIMCP_STATELESS)",
    )
    run.add_argument(
        "--json-response",
        action="store_true",
        default=None,
        help="http: answer POSTs with JSON, not SSE (env TRIMCP_JSON_RESPONSE)",
    )
    run.add_argument(
        "--log-level",
        default=None,
        choices=("debug", "info", "warning", "error", "critical"),
        help="log Python logging records on stderr (env TRIMCP_LOG_LEVEL)",
    )
    run.add_argument(
        "--store",
        default=None,
        metavar="URL",
        help="http: where sessions and events are kept: memory:// (default) or "
        "redis://HOST:PORT/DB, shared by replicas (env TRIMCP_STORE)",
    )
    run.add_argument(
        "--workers",
        type=worker_count,
        default=1,
        metavar="N",
        help="http: serve with N processes on one port (SIGHUP reloads them)",
    )
    run.add_argument("--reuse-port", action="store_true", default=None, help=argparse.SUPPRESS)
    run.add_argument(
        "--allow-host",
        action="append",
        default=None,
        metavar="NAME",
        help="a Host name clients may use (repeatable; needed when --host is not loopback; "
        "env TRIMCP_ALLOWED_HOSTS, comma-separated)",
    )
    run.add_argument(
        "--allow-origin",
        action="append",
        default=None,
        metavar="ORIGIN",
        help="an Origin browsers may send, e.g. https://app.example (repeatable; env "
        "TRIMCP_ALLOWED_ORIGINS)",
    )
    run.add_argument(
        "--auth-issuer",
        default=None,
        metavar="URL",
        help="http: require OAuth access tokens (JWT) from this authorization server, for a "
        "server that declares no auth= itself (env TRIMCP_AUTH_ISSUER)",
    )
    run.add_argument(
        "--auth-upstream",
        default=None,
        metavar="PROVIDER",
        help="http: be the authorization server clients see, users logging in at github, "
        "google or oidc:ISSUER_URL; client id and secret from env "
        "TRIMCP_AUTH_UPSTREAM_CLIENT_ID and TRIMCP_AUTH_UPSTREAM_CLIENT_SECRET only (env "
        "TRIMCP_AUTH_UPSTREAM)",
    )
    run.add_argument(
        "--auth-resource",
        default=None,
        metavar="URL",
        help="http: this server's URL as clients reach it, the tokens' audience (default on "
        "loopback: the URL served; env TRIMCP_AUTH_RESOURCE)",
    )
    run.add_argument(
        "--auth-scope",
        action="append",
        default=None,
        metavar="SCOPE",
        help="http: a scope every request's token must grant (repeatable; env "
        "TRIMCP_AUTH_SCOPES, space- or comma-separated)",
    )
    run.add_argument(
        "--auth-dpop",
        choices=("off", "accept", "require"),
        default=None,
        help="http: DPoP-bound tokens (RFC 9449): accept them as well as Bearer tokens, or "
        "require them (env TRIMCP_AUTH_DPOP; default off)",
    )
    run.add_argument(
        "-v", "--verbose", action="store_true", help="show every message on the wire (stdio)"
    )
    run.add_argument(
        "--check",
        action="store_true",
        help="import the target and find its server, then exit without serving (0: it loads)",
    )

    dev = sub.add_parser(
        "dev",
        help="serve (HTTP by default) and restart when a .py file changes",
    )
    dev.add_argument(
        "--interval",
        type=float,
        default=0.5,
        metavar="SECONDS",
        help="how often files are checked (default 0.5)",
    )
    dev.add_argument("target", help="path/to/server.py[:app]")
    dev.add_argument(
        "run_args",
        nargs=argparse.REMAINDER,
        metavar="...",
        help="flags for trimcp run (e.g. --port 8000)",
    )

    install = sub.add_parser("install", help="add a server to an MCP host's config file")
    install.add_argument("host", choices=HOSTS)
    install.add_argument("target", help="path/to/server.py[:app] or package.module[:app]")
    install.add_argument("--name", help="the server's name in the host (default: file stem)")
    install.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an environment variable for the server (repeatable)",
    )
    install.add_argument(
        "--config", metavar="PATH", help="the host's config file (default: where the host reads it)"
    )
    install.add_argument(
        "--project",
        action="store_true",
        help="cursor: the project's .cursor/mcp.json, not ~/.cursor/mcp.json",
    )

    def client_command(name: str, help_text: str) -> argparse.ArgumentParser:
        return sub.add_parser(
            name,
            help=help_text,
            epilog=CLIENT_EPILOG,
            formatter_class=argparse.RawTextHelpFormatter,
        )

    lister = client_command("list", "list tools, resources, prompts or templates")
    lister.add_argument("kind", choices=LIST_KINDS)
    lister.add_argument("--json", action="store_true", help="print the wire JSON")
    _client_options(lister)

    call = client_command("call", "call a tool: trimcp call TOOL key=value ...")
    call.add_argument("tool")
    call.add_argument(
        "arguments",
        nargs="*",
        metavar="key=value",
        help="arguments, typed by the tool's input schema (JSON for objects and arrays)",
    )
    call.add_argument(
        "--args", dest="json_args", metavar="JSON", help="the arguments as one JSON object"
    )
    call.add_argument(
        "--json",
        action="store_true",
        help="print the wire JSON (the arguments are key=value words, a '{...}' word or --args)",
    )
    call.add_argument(
        "--allow-unknown",
        action="store_true",
        help="send argument names the tool's input schema does not list (by default such a "
        "name is refused, exit 2, with the closest one it lists)",
    )
    call.add_argument(
        "--task",
        action="store_true",
        help="run the call as a task: print its status changes on stderr, "
        "then its result; Ctrl+C cancels the task",
    )
    call.add_argument(
        "--ttl",
        type=float,
        default=None,
        metavar="SECONDS",
        help="with --task: how long the server should keep the task",
    )
    _client_options(call)

    read = client_command("read", "read a resource: trimcp read URI, or TEMPLATE key=value ...")
    read.add_argument("uri", help="a resource's URI, or a URI template such as 'memo://{day}'")
    read.add_argument(
        "arguments",
        nargs="*",
        metavar="key=value",
        help="values of the template's variables (a name it lacks is refused, exit 2)",
    )
    read.add_argument("--json", action="store_true", help="print the wire JSON")
    _client_options(read)

    prompt = client_command("prompt", "get a prompt: trimcp prompt NAME key=value ...")
    prompt.add_argument("name")
    prompt.add_argument("arguments", nargs="*", metavar="key=value", help="arguments (strings)")
    prompt.add_argument(
        "--args",
        dest="json_args",
        metavar="JSON",
        help="the arguments as one JSON object of strings",
    )
    prompt.add_argument(
        "--allow-unknown",
        action="store_true",
        help="send argument names the prompt does not list (by default such a name is "
        "refused, exit 2, with the closest one it lists)",
    )
    prompt.add_argument("--json", action="store_true", help="print the wire JSON")
    _client_options(prompt)

    skills = client_command("skills", "the skills a server serves: trimcp skills list|get")
    which = skills.add_subparsers(
        dest="skills_command", metavar="list|get", required=True, parser_class=_Parser
    )
    skills_list = which.add_parser(
        "list",
        help="list the skills (name, description, number of files)",
        epilog=CLIENT_EPILOG,
        formatter_class=argparse.RawTextHelpFormatter,
    )
    skills_list.add_argument("--json", action="store_true", help="print the wire JSON")
    _client_options(skills_list)
    skills_get = which.add_parser(
        "get",
        help="print a file of a skill (SKILL.md by default), verified against its manifest",
        epilog=CLIENT_EPILOG,
        formatter_class=argparse.RawTextHelpFormatter,
    )
    skills_get.add_argument("skill", help="the skill's name or its skill://NAME/SKILL.md URI")
    skills_get.add_argument(
        "file", nargs="?", default=None, help="a file of the skill, e.g. references/STYLE.md"
    )
    skills_get.add_argument(
        "--json", action="store_true", help="print the skill's entry (wire JSON) instead"
    )
    _client_options(skills_get)

    ping = client_command("ping", "check that a server answers")
    ping.add_argument("--json", action="store_true", help="print the result as JSON")
    _client_options(ping)

    config = sub.add_parser("config", help="print the JSON a host needs to launch a server")
    config.add_argument("host", choices=HOSTS)
    config.add_argument("target", help="path/to/server.py[:app] or package.module[:app]")
    config.add_argument("--name", help="the server's name in the host (default: file stem)")
    config.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an environment variable for the server (repeatable)",
    )

    sub.add_parser(
        "bench",
        help="run the benchmark suite (from a trimcp checkout; args go to it)",
        add_help=False,
    )
    return parser


def split_server_command(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """``argv`` before the first ``--``, and the server command after it."""
    words = list(argv)
    if "--" in words:
        index = words.index("--")
        return words[:index], words[index + 1 :]
    return words, []


def _argument_word(word: str) -> bool:
    """Whether a word argparse left over is an argument of call or prompt: ``key=value``
    or a JSON object (never an option)."""
    return not word.startswith("-") and ("=" in word or word.lstrip().startswith("{"))


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """Parse the command line; raises :class:`UsageError` (exit 2) when it is wrong."""
    own, server_command = split_server_command(argv)
    args, extra = build_parser().parse_known_args(own)
    if extra:
        # argparse ends a positional list at the first option, so `call t --json a=1 b=2`
        # leaves `b=2` over: the key=value words (and a JSON object) of call and prompt may
        # come anywhere.
        if getattr(args, "arguments", None) is None or not all(map(_argument_word, extra)):
            raise UsageError(
                f"unrecognized arguments: {' '.join(extra)}", hint="see: trimcp --help"
            )
        args.arguments.extend(extra)
    if args.command is None:
        raise UsageError("no command given", hint="see: trimcp --help")
    args.server_command = server_command
    if server_command and args.command not in (
        "list",
        "call",
        "read",
        "prompt",
        "ping",
        "skills",
    ):
        raise UsageError(f"'trimcp {args.command}' takes no server command after --")
    if args.command == "skills" and getattr(args, "file", None) is not None and args.json:
        raise UsageError(
            "--json prints the skill's entry, not a file", hint="drop FILE or drop --json"
        )
    if args.command == "call" and args.tool.lstrip().startswith("{"):
        raise UsageError(
            f"the tool name comes first, got {args.tool!r}",
            hint="trimcp call TOOL '{...}' (or --args '{...}')",
        )
    return args

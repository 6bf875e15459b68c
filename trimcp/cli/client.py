"""``trimcp list|call|read|prompt|ping``: a one-shot client for any MCP server.

The server is a command after ``--`` (spawned, stdio) or ``--url`` (``http(s)://`` for
Streamable HTTP, ``ws(s)://`` for WebSocket). Results go to stdout; progress, server log
messages and the server's stderr (with ``--verbose``) go to stderr.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import math
import os
import shutil
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from trimcp._groups import single_exception
from trimcp.cli import output
from trimcp.cli.arguments import Arguments, read_arguments
from trimcp.cli.errors import EXIT_FAILURE, EXIT_OK, CliError, UsageError
from trimcp.cli.mistakes import answered, check_argument_names, unknown, url_hint
from trimcp.cli.wiretap import WireTap
from trimcp.client import Client, connect_transport
from trimcp.client.stateless import plan_for
from trimcp.errors import LocalProtocolError, McpError, SessionClosed
from trimcp.protocol.versions import LATEST_VERSION
from trimcp.session import ProgressCallback, SessionOptions
from trimcp.session.transport import Transport
from trimcp.transports.stdio import ShutdownTimeouts, open_stdio_client_transport
from trimcp.types import (
    CallToolResult,
    Implementation,
    LoggingMessageNotificationParams,
    Prompt,
    Tool,
)

#: Lines of the server's stderr kept to explain a failure when ``--verbose`` is off.
STDERR_TAIL = 20

# The child server runs in a process group of its own, so the SIGINT a terminal sends on
# Ctrl-C reaches only the CLI, which then cancels the call on the wire: the server sees
# notifications/cancelled instead of dying mid-handler. exec keeps the child's pid.
_DETACH = (
    "import os, sys\n"
    "try:\n"
    "    os.setpgid(0, 0)\n"
    "except OSError:\n"
    "    pass\n"
    "try:\n"
    "    os.execvp(sys.argv[1], sys.argv[1:])\n"
    "except OSError as exc:\n"
    "    sys.stderr.write(f'cannot start {sys.argv[1]!r}: {exc.strerror}\\n')\n"
    "    sys.exit(127)\n"
)


def err(line: str) -> None:
    """One line on stderr, flushed at once (a progress line must show while a call runs)."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def detached(argv: Sequence[str]) -> list[str]:
    """``argv`` launched in a new process group (POSIX); checks that the program exists."""
    program = argv[0]
    found = shutil.which(program) if os.sep not in program else program
    if found is None or not os.access(found, os.X_OK) or os.path.isdir(found):
        raise CliError(f"cannot start {program!r}: command not found")
    if os.name != "posix":
        return list(argv)
    return [sys.executable, "-c", _DETACH, *argv]


class ServerStderr:
    """Where the child's stderr goes: shown live with ``--verbose``, else the last lines
    are kept (bounded) to explain a failure of the server itself.

    :meth:`mark` notes where the command proper began (after the handshake), so that a
    failure of the command shows only what the server wrote while it ran, not its
    start-up banner."""

    def __init__(self, verbose: bool) -> None:
        self.verbose = verbose
        self.tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL)
        self.count = 0
        self.marked: int | None = None

    def __call__(self, line: str) -> None:
        self.count += 1
        if self.verbose:
            err(f"[server] {line}")
        else:
            self.tail.append(line)

    def mark(self) -> None:
        self.marked = self.count

    def dump(self, *, since_mark: bool = False) -> None:
        """Show the kept lines (``since_mark``: only those written after :meth:`mark`)."""
        lines = list(self.tail)
        if since_mark and self.marked is not None:
            lines = lines[len(lines) - min(len(lines), self.count - self.marked) :]
        if lines:
            err("trimcp: the server's last stderr lines:")
            for line in lines:
                err(f"  {line}")
        self.tail.clear()


#: The longest a call's progress notifications may extend ``--timeout``, from its start
#: (``SessionOptions.max_request_timeout``, as the library has it by default); a
#: ``--timeout`` above it is its own ceiling.
MAX_PROGRESS_TIMEOUT = 600.0


def session_options(timeout: float) -> SessionOptions:
    """Bounds for a short-lived CLI session: the request timeout (0: none), which progress
    extends never past :data:`MAX_PROGRESS_TIMEOUT` from the start, and a quick close."""
    limit = math.inf if timeout == 0 else timeout
    return SessionOptions(
        request_timeout=limit,
        max_request_timeout=max(limit, MAX_PROGRESS_TIMEOUT),
        shutdown_grace=1.0,
        flush_timeout=1.0,
        close_timeout=1.0,
    )


def _headers(values: Sequence[str]) -> list[tuple[str, str]]:
    headers = []
    for value in values:
        name, sep, content = value.partition(":")
        if not sep or not name.strip():
            raise UsageError(f"--header needs 'Name: value', got {value!r}")
        headers.append((name.strip(), content.strip()))
    return headers


def token_file() -> Path:
    """Where ``--auth`` keeps tokens: ``$XDG_CACHE_HOME/trimcp/tokens.json``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "trimcp" / "tokens.json"


def _oauth(args: argparse.Namespace) -> Any:
    """``--auth``: log in through the browser (or a printed URL), tokens in a file."""
    from trimcp.auth import FileTokenStore, LoopbackBrowser, OAuthClient

    def announce(url: str) -> None:
        print(f"Log in to continue: {url}", file=sys.stderr, flush=True)

    return OAuthClient(
        interaction=LoopbackBrowser(open_browser=not args.no_browser, announce=announce),
        store=FileTokenStore(token_file()),
        client_name="trimcp CLI",
    )


class _NoLogin:
    """The ``auth`` of an HTTP transport without ``--auth``: sends no token of its own
    (a ``--header`` still goes out) and turns a 401/403 into an error that carries the
    HTTP status, so the CLI can say "add --auth" instead of relaying the refusal's body."""

    def session(self, server_url: str, spawn: Any) -> _NoLogin:
        return self

    async def authorization(self) -> str | None:
        return None

    async def challenge(self, status: int, www_authenticate: str | None, used: str | None) -> None:
        from trimcp.auth.errors import AuthError

        raise AuthError("no login without --auth")


def open_transport(
    args: argparse.Namespace, stderr: ServerStderr
) -> AbstractAsyncContextManager[Transport]:
    """The transport to the server the command line names (not yet initialized)."""
    url: str | None = args.url
    command: list[str] = args.server_command
    if url is None and not command:
        raise UsageError(
            "no server given", hint="add --url URL, or -- followed by the server's command"
        )
    if url is not None and command:
        raise UsageError("give either --url or a command after --, not both")
    if url is None:
        return open_stdio_client_transport(
            detached(command),
            on_stderr=stderr,
            shutdown=ShutdownTimeouts(after_stdin_close=2.0, after_sigterm=2.0, after_sigkill=2.0),
        )
    headers = _headers(args.header)
    scheme = url.split(":", 1)[0].lower()
    if scheme in ("http", "https"):
        from trimcp.transports.http_client import open_http_client_transport

        timeout = 30.0 if args.timeout == 0 else args.timeout
        auth = _oauth(args) if getattr(args, "auth", False) else _NoLogin()
        return open_http_client_transport(url, headers=dict(headers), timeout=timeout, auth=auth)
    if scheme in ("ws", "wss"):
        from trimcp.transports.websocket import open_websocket_client_transport

        return open_websocket_client_transport(url, headers=headers)
    raise UsageError(f"--url must start with http://, https://, ws:// or wss://, got {url!r}")


@asynccontextmanager
async def open_client(args: argparse.Namespace, stderr: ServerStderr) -> AsyncIterator[Client]:
    """A connected, initialized client for the command line's server.

    Progress and the server's log messages are shown on stderr unless ``--quiet``; with
    ``--verbose`` every message on the wire is too. Cancellation: as
    :func:`trimcp.client.connect_transport` (a call in flight is cancelled on the server).
    """
    quiet: bool = args.quiet

    def on_log(params: LoggingMessageNotificationParams) -> None:
        if not quiet:
            source = f" {params.logger}" if params.logger else ""
            data = params.data if isinstance(params.data, str) else repr(params.data)
            err(f"[server {params.level}{source}] {data}")

    try:
        plan_for(args.mode, LATEST_VERSION)
    except ValueError as exc:
        raise UsageError(str(exc), hint="see: trimcp --help") from None
    async with open_transport(args, stderr) as transport:
        wire: Transport = WireTap(transport, err) if args.verbose else transport
        async with connect_transport(
            wire,
            options=session_options(args.timeout),
            client_info=Implementation(name="trimcp-cli", version=_version()),
            on_log_message=on_log,
            # 2026 servers send log messages only to requests that ask for them.
            log_level=None if quiet else "debug",
            mode=args.mode,
        ) as client:
            if args.verbose:
                server = client.server_info
                err(
                    f"connected to {server.name} {server.version}: protocol "
                    f"{client.protocol_version} ({client.era.value})"
                )
            yield client


def _version() -> str:
    from trimcp._version import __version__

    return __version__


def emit(text: str) -> None:
    """``text`` on stdout (ending in a newline), flushed."""
    if text:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()


# --- the commands ---------------------------------------------------------------------------

LIST_KINDS = ("tools", "resources", "prompts", "templates")
_LIST_KEYS = {
    "tools": "tools",
    "resources": "resources",
    "prompts": "prompts",
    "templates": "resourceTemplates",
}


async def cmd_list(client: Client, args: argparse.Namespace) -> int:
    kind: str = args.kind
    items: list[Any]
    formatter: Callable[[Any], str]
    caps = client.server_capabilities
    declared = (
        caps.tools if kind == "tools" else caps.prompts if kind == "prompts" else caps.resources
    )
    if declared is None:
        # A server that declares no prompts (say) has none: the answer is an empty list.
        items = []
        formatter, key = output.format_tools, _LIST_KEYS[kind]
    elif kind == "tools":
        items = [t async for t in client.iter_tools()]
        formatter, key = output.format_tools, "tools"
    elif kind == "resources":
        items = [r async for r in client.iter_resources()]
        formatter, key = output.format_resources, "resources"
    elif kind == "templates":
        items = [t async for t in client.iter_resource_templates()]
        formatter, key = output.format_templates, "resourceTemplates"
    else:
        items = [p async for p in client.iter_prompts()]
        formatter, key = output.format_prompts, "prompts"
    if args.json:
        emit(output.to_json({key: items}))
    elif items:
        emit(formatter(items))
    else:
        err(f"trimcp: the server lists no {kind}")
    return EXIT_OK


async def _listed_tool(client: Client, name: str) -> Tool | None:
    """The tool ``name`` as the server lists it (``None`` when it lists no such tool)."""
    if client.server_capabilities.tools is None:
        return None
    async for tool in client.iter_tools():
        if tool.name == name:
            return tool
    return None


async def _check_tool_exists(client: Client, name: str) -> None:
    """Raise :class:`UnknownName` when the server lists no tool ``name`` (called after a
    call failed: a server may refuse an unknown tool with an error or a tool error)."""
    if client.server_capabilities.tools is None:
        raise unknown("tool", name, [])
    names = [tool.name async for tool in client.iter_tools()]
    if name not in names:
        raise unknown("tool", name, names) from None


async def cmd_call(client: Client, args: argparse.Namespace) -> int:
    given: Arguments = args.read_arguments
    # key=value words follow the tool's input schema, and every name must be one it lists
    # (a misspelled one would be dropped silently by most servers), so the listing comes
    # first; a call without arguments needs none.
    tool = await _listed_tool(client, args.tool) if given.names() else None
    if tool is not None and not args.allow_unknown:
        check_argument_names(given.names(), tool.input_schema, owner=f"tool {args.tool!r}")
    arguments = given.typed(tool.input_schema if tool else None, tool=args.tool)
    quiet: bool = args.quiet

    def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if not quiet:
            err(output.format_progress(progress, total, message))

    timeout = None if args.timeout == 0 else args.timeout
    try:
        if getattr(args, "task", False):
            result = await _call_as_task(client, args, arguments, timeout, on_progress)
        else:
            result = await client.call_tool(
                args.tool,
                arguments,
                timeout=timeout,
                on_progress=on_progress,
                reset_timeout_on_progress=True,
            )
    except McpError as exc:
        if answered(exc) and tool is None:
            await _check_tool_exists(client, args.tool)
        raise
    if result.is_error and tool is None:
        await _check_tool_exists(client, args.tool)
    if args.json:
        emit(output.to_json(result))
    elif not result.is_error:
        emit(output.format_call(result))
    if result.is_error:
        detail = output.format_call(result).strip().replace("\n", " ")
        err(f"trimcp: tool {args.tool!r} failed" + (f": {detail}" if detail else ""))
        return EXIT_FAILURE
    return EXIT_OK


#: Seconds ``trimcp call --task`` waits for ``tasks/cancel`` after Ctrl+C.
CANCEL_TASK_TIMEOUT = 5.0


async def _call_as_task(
    client: Client,
    args: argparse.Namespace,
    arguments: Any,
    timeout: float | None,
    on_progress: ProgressCallback,
) -> CallToolResult:
    """``trimcp call --task``: start the task, show its states and progress (2025-11-25),
    return its result.

    Interrupted (Ctrl+C), it cancels the task on the server (bounded) before exiting."""
    handle = await client.call_tool_as_task(
        args.tool, arguments, ttl=args.ttl, timeout=timeout, on_progress=on_progress
    )
    try:
        async for task in handle:
            if not args.quiet and handle.task_id:
                message = f": {task.status_message}" if task.status_message else ""
                err(f"task {handle.task_id}: {task.status}{message}")
        return await handle.result()
    except trio.Cancelled:
        if handle.task_id and not handle.done:
            with trio.CancelScope(shield=True) as scope, contextlib.suppress(Exception):
                scope.deadline = trio.current_time() + CANCEL_TASK_TIMEOUT
                await handle.cancel()
        raise


async def _check_resource_exists(client: Client, uri: str) -> None:
    """Raise :class:`UnknownName` when ``uri`` is neither a listed resource nor matched by
    a listed template (then the read failed for another reason: it is raised as it is)."""
    from trimcp.server.uri_template import UriTemplate

    if client.server_capabilities.resources is None:
        raise unknown("resource", uri, [])
    uris = [resource.uri async for resource in client.iter_resources()]
    templates = [template.uri_template async for template in client.iter_resource_templates()]
    if uri in uris:
        return
    for template in templates:
        with contextlib.suppress(ValueError):
            if UriTemplate(template).match(uri) is not None:
                return
    raise unknown("resource", uri, uris + templates) from None


def fill_template(uri: str, words: Sequence[str]) -> str:
    """``trimcp read TEMPLATE key=value...``: ``uri`` with its template's variables filled
    from the words (no words: ``uri`` as it is). A URI that is no template, or a name that
    is none of its variables, is a :class:`UsageError` (exit 2)."""
    if not words:
        return uri
    from trimcp.server.uri_template import UriTemplate

    values = read_arguments(words, None).strings()
    try:
        template = UriTemplate(uri)
    except ValueError as exc:
        raise UsageError(f"{uri!r} is not a valid URI template: {exc}") from None
    if not template.is_template:
        raise UsageError(
            f"{uri!r} is not a URI template",
            hint="key=value words fill a template's {variables}, e.g. trimcp read "
            "'memo://{day}' day=monday",
        )
    check_argument_names(
        values, template.variables, owner=f"URI template {uri!r}", what="variable", anyway=None
    )
    return template.expand(values)


async def cmd_read(client: Client, args: argparse.Namespace) -> int:
    timeout = None if args.timeout == 0 else args.timeout
    try:
        result = await client.read_resource(args.uri, timeout=timeout)
    except McpError as exc:
        if answered(exc):
            await _check_resource_exists(client, args.uri)
        raise
    emit(output.to_json(result) if args.json else output.format_read(result))
    return EXIT_OK


async def _listed_prompt(client: Client, name: str) -> Prompt | None:
    """The prompt ``name`` as the server lists it (``None`` when it lists no such prompt)."""
    if client.server_capabilities.prompts is None:
        return None
    async for prompt in client.iter_prompts():
        if prompt.name == name:
            return prompt
    return None


async def cmd_prompt(client: Client, args: argparse.Namespace) -> int:
    given: Arguments = args.read_arguments
    arguments = given.strings()
    if arguments and not args.allow_unknown:
        prompt = await _listed_prompt(client, args.name)
        if prompt is not None:
            names = [argument.name for argument in prompt.arguments or []]
            check_argument_names(arguments, names, owner=f"prompt {args.name!r}")
    timeout = None if args.timeout == 0 else args.timeout
    try:
        result = await client.get_prompt(args.name, arguments, timeout=timeout)
    except McpError as exc:
        if answered(exc) and client.server_capabilities.prompts is not None:
            names = [prompt.name async for prompt in client.iter_prompts()]
            if args.name not in names:
                raise unknown("prompt", args.name, names) from None
        raise
    emit(output.to_json(result) if args.json else output.format_prompt(result))
    return EXIT_OK


async def cmd_ping(client: Client, args: argparse.Namespace) -> int:
    timeout = None if args.timeout == 0 else args.timeout
    start = trio.current_time()
    await client.ping(timeout=timeout)
    elapsed_ms = (trio.current_time() - start) * 1000
    server = client.server_info
    if args.json:
        emit(
            f'{{"ok": true, "ms": {elapsed_ms:.3f}, "server": {output.to_json(server)}, '
            f'"protocolVersion": "{client.protocol_version}", "era": "{client.era.value}"}}'
        )
    else:
        who = f"{server.name} {server.version}" if server.version else server.name
        emit(
            f"pong from {who} in {elapsed_ms:.1f} ms "
            f"(protocol {client.protocol_version}, {client.era.value})"
        )
    return EXIT_OK


async def cmd_skills(client: Client, args: argparse.Namespace) -> int:
    """``trimcp skills list|get`` (see :mod:`trimcp.cli.skills`)."""
    from trimcp.cli.skills import cmd_skills as run

    return await run(client, args)


COMMANDS: dict[str, Callable[[Client, argparse.Namespace], Any]] = {
    "list": cmd_list,
    "call": cmd_call,
    "read": cmd_read,
    "prompt": cmd_prompt,
    "ping": cmd_ping,
    "skills": cmd_skills,
}


async def run_client_command(args: argparse.Namespace, stderr: ServerStderr) -> int:
    """Connect, run the command, disconnect. A failure is raised as one exception (never a
    group); the server's stderr is shown first only when it says something about it: all
    of what was kept when the server itself failed (it exited, or never completed the
    handshake), what it wrote during the command when it answered with an error, nothing
    when the command line or this client is at fault. Cancellation: see
    :func:`open_client`."""
    if args.command in ("call", "prompt"):
        # Refused here, before a server is started: a malformed argument is our mistake.
        args.read_arguments = read_arguments(args.arguments, args.json_args)
        if args.command == "prompt":
            args.read_arguments.strings()
    if args.command == "read":
        args.uri = fill_template(args.uri, args.arguments)
    try:
        try:
            async with open_client(args, stderr) as client:
                stderr.mark()
                code: int = await COMMANDS[args.command](client, args)
        except BaseExceptionGroup as group:
            # The stdio transport's stderr drain runs in a nursery, which wraps what we raise.
            only = single_exception(group)
            if only is None or not isinstance(only, Exception):
                raise
            raise only from None
    except Exception as exc:
        _explain(exc, args, stderr)
        raise
    if code != EXIT_OK:  # e.g. a tool that failed: its server may have said why
        stderr.dump(since_mark=True)
    return code


def _explain(exc: Exception, args: argparse.Namespace, stderr: ServerStderr) -> None:
    """Show what the server wrote if it bears on ``exc``; raise a :class:`CliError` with a
    hint instead of ``exc`` when a common mistake explains it."""
    if isinstance(exc, (CliError, LocalProtocolError)):
        return  # the command line or this client is at fault: the server has nothing to add
    if isinstance(exc, SessionClosed) or stderr.marked is None:
        stderr.dump()  # the server itself failed: exited, crashed, or did not start
    else:
        stderr.dump(since_mark=True)
    url: str | None = args.url
    if url is not None and stderr.marked is None:
        token = any(h.split(":", 1)[0].strip().lower() == "authorization" for h in args.header)
        hint = url_hint(url, exc, auth=bool(getattr(args, "auth", False)), token=token)
        if hint is not None:
            from trimcp.cli import describe_error

            message, _ = describe_error(exc)
            raise CliError(message, hint=hint) from exc

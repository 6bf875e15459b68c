"""Serving Skills (SEP-2640) from a :class:`~trimcp.Server`.

    skills = Skills(app)                       # declares io.modelcontextprotocol/skills
    skills.add_folder("skills/pdf-processing")  # SKILL.md + its files
    skills.add(Skill.from_text(SKILL_MD, {"references/FORMS.md": "..."}))

A skill is read once: its files, their SHA-256 digests and sizes (the manifest) are
computed when it is added (:meth:`Skills.add_folder` at start-up, or
:meth:`Skills.load_folder`/:meth:`Skills.refresh` off the event loop in a worker thread).
:class:`Skills` is a provider of the server (:mod:`trimcp.server.providers`): every file
is one of its resources (``skill://<name>/<path>``, ``SKILL.md`` as ``text/markdown`` named
and described by its front matter), read through ``resources/read`` like any resource:
resource scopes apply, and only the files of the manifest exist (no path is ever joined
from a request). :meth:`Skills.refresh` re-reads the folders and replaces the skills that
changed; adding, removing or replacing a skill tells clients
(``notifications/resources/list_changed``).

``skills/list`` (paginated as the server's lists are), ``skills/get`` (``-32602`` for a
URI that is not a served skill) and ``resources/directory/read`` (a skill folder's
direct children; sub-folders as ``inode/directory``; ``-32602`` for anything that is not
a folder) are the extension's methods.
"""

from __future__ import annotations

import contextlib
import mimetypes
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import trio

from trimcp._record import Record
from trimcp.auth.principal import AuthInfo
from trimcp.errors import INVALID_PARAMS, McpError
from trimcp.protocol import skills as wire
from trimcp.protocol.pagination import paginate
from trimcp.server.extensions import Extension
from trimcp.server.providers import Kind, Provider
from trimcp.server.resources import RegisteredResource

if TYPE_CHECKING:
    from trimcp.server.app import Server
    from trimcp.server.context import Context


@attrs.frozen(repr=False, eq=False)
class SkillFile(Record):
    """One file of a skill: its path inside the skill, its bytes, and their manifest."""

    path: str
    data: bytes
    digest: str
    mime_type: str | None

    @classmethod
    def of(cls, path: str, data: bytes) -> SkillFile:
        mime = wire.MARKDOWN_MIME if path.endswith(".md") else mimetypes.guess_type(path)[0]
        return cls(path, data, wire.digest(data), mime)


@attrs.frozen(repr=False, eq=False)
class Skill(Record):
    """A skill: its front matter (``name``, ``description``, ...) and its files, the
    ``SKILL.md`` among them. ``folder``: where it was read from (None: from code)."""

    front_matter: dict[str, Any]
    files: tuple[SkillFile, ...]
    folder: Path | None = None

    @property
    def name(self) -> str:
        name: str = self.front_matter["name"]
        return name

    @property
    def uri(self) -> str:
        return wire.skill_uri(self.name)

    @classmethod
    def from_text(cls, skill_md: str, files: Mapping[str, str | bytes] | None = None) -> Skill:
        """A skill from code: the text of its ``SKILL.md`` and its other files by path
        (``"references/FORMS.md"``). Raises ``ValueError`` for a bad front matter,
        name or path."""
        contents: dict[str, bytes] = {wire.SKILL_FILE: skill_md.encode()}
        for path, data in (files or {}).items():
            contents[_check_path(path)] = data.encode() if isinstance(data, str) else data
        return cls._build(contents, None)

    @classmethod
    def from_folder(cls, folder: str | os.PathLike[str]) -> Skill:
        """Read a skill folder (blocking: call it before serving, or through
        :meth:`Skills.load_folder`). Symbolic links, hidden files and anything but regular
        files are skipped, so nothing outside the folder is served. The folder is walked
        and every size taken before any file is read: one past the limits (512 files,
        16 MiB in all, :data:`MAX_FOLDER_ENTRIES` entries looked at) is refused with a
        ``ValueError`` at the cost of its directory listing, never of its contents."""
        root = Path(folder).resolve()
        found = _walk(root)
        contents: dict[str, bytes] = {}
        budget = wire.MAX_TOTAL_BYTES
        for path, full in found:
            data = read_bounded(full, budget)
            budget -= len(data)
            contents[path] = data
        if wire.SKILL_FILE not in contents:
            raise ValueError(f"{root} holds no {wire.SKILL_FILE}: a skill folder needs one")
        skill = cls._build(contents, root)
        if root.name != skill.name:
            raise ValueError(
                f"The skill folder {root} must be named after its skill {skill.name!r}"
            )
        return skill

    @classmethod
    def _build(cls, contents: dict[str, bytes], folder: Path | None) -> Skill:
        try:
            text = contents[wire.SKILL_FILE].decode()
        except UnicodeDecodeError:
            raise ValueError("SKILL.md must be UTF-8 text") from None
        front, _ = wire.split_front_matter(text)
        name = front["name"]
        if not wire.NAME.match(name):
            raise ValueError(
                f"Skill name {name!r}: 1-64 lowercase letters, digits and single hyphens"
            )
        if len(contents) > wire.MAX_FILES:
            raise ValueError(f"Skill {name!r} has {len(contents)} files (at most 512)")
        if sum(map(len, contents.values())) > wire.MAX_TOTAL_BYTES:
            raise ValueError(f"Skill {name!r} is larger than 16 MiB")
        files = tuple(SkillFile.of(path, data) for path, data in sorted(contents.items()))
        return cls(front, files, folder)

    def entry(self) -> dict[str, Any]:
        """The skill's ``skills/list`` entry (wire form)."""
        return {
            "uri": self.uri,
            "frontmatter": self.front_matter,
            "resources": [
                {"uri": wire.skill_uri(self.name, f.path), "digest": f.digest, "size": len(f.data)}
                for f in self.files
            ],
        }


#: Entries (files, folders, links, hidden ones) a folder walk looks at before it refuses
#: the folder: it bounds the walk of a tree that serves little (hidden folders are not
#: entered, so a ``.git`` inside costs one entry).
MAX_FOLDER_ENTRIES = 2000


def _walk(root: Path) -> list[tuple[str, Path]]:
    """The files a skill folder serves, as (path inside the skill, path on disk), from
    ``lstat`` alone: refused (``ValueError``) as soon as they or their sizes pass the
    skill limits, before anything is read. Links are never followed: a linked folder is
    not entered and a linked file not served."""
    files: list[tuple[str, Path]] = []
    total = entries = 0
    pending = [root]
    while pending:
        directory = pending.pop()
        with os.scandir(directory) as listing:
            for item in listing:
                entries += 1
                if entries > MAX_FOLDER_ENTRIES:
                    raise ValueError(
                        f"The skill folder {root} has more than {MAX_FOLDER_ENTRIES} entries "
                        "(files, folders, links): trimcp looks at no more"
                    )
                if item.name.startswith(".") or item.is_symlink():
                    continue
                if item.is_dir(follow_symlinks=False):
                    pending.append(Path(item.path))
                    continue
                info = item.stat(follow_symlinks=False)
                if not stat.S_ISREG(info.st_mode):
                    continue  # a pipe or a device: opening it could block for ever
                total += info.st_size
                inside = Path(item.path).relative_to(root).as_posix()
                files.append((inside, Path(item.path)))
                if len(files) > wire.MAX_FILES:
                    raise ValueError(
                        f"The skill folder {root} holds more than {wire.MAX_FILES} files "
                        f"(a skill has at most {wire.MAX_FILES})"
                    )
                if total > wire.MAX_TOTAL_BYTES:
                    raise ValueError(
                        f"The skill folder {root} is larger than 16 MiB "
                        f"({inside} brings it to {total} bytes)"
                    )
    return files


#: Opening a file never follows a link (one swapped in after the walk) nor blocks on a
#: pipe swapped in; both flags are absent on some platforms.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


def read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of the regular file ``path``, reading at most ``limit + 1`` of them:
    ``ValueError`` when it holds more (it grew since its size was taken, or the skill's
    budget is spent), ``OSError`` when it is now a link or cannot be opened."""
    fd = os.open(path, _OPEN_FLAGS | getattr(os, "O_BINARY", 0))
    with open(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{path} is no longer a regular file")
        data = file.read(limit + 1)
    if len(data) > limit:
        raise ValueError(
            f"{path} grew while the skill was read: the skill would pass 16 MiB "
            f"(at most {limit} more bytes)"
        )
    return data


def _check_path(path: str) -> str:
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"Skill file path {path!r}: a relative path without '.' or '..'")
    return path


class Skills(Provider):
    """The skills a server serves (see the module docs): a provider of ``app`` whose
    resources are the skills' files. Creating it declares the extension on ``app``
    (``directoryRead`` when ``directory_read``) and adds it as a provider."""

    def __init__(self, app: Server, *, directory_read: bool = True) -> None:
        self.app = app
        self._skills: dict[str, Skill] = {}
        #: The files of every skill, as resources by URI (what this provider serves).
        self._files: dict[str, RegisteredResource] = {}
        self._listed: list[RegisteredResource] = []
        settings = {"directoryRead": True} if directory_read else {}
        extension = Extension(wire.EXTENSION_ID, settings, schemes=(wire.SCHEME,))
        extension.add_named(wire.LIST_SKILLS.name, self._list)
        extension.add_named(wire.GET_SKILL.name, self._get)
        if directory_read:
            extension.add_named(wire.READ_DIRECTORY.name, self._read_directory)
        self.extension = app.add_extension(extension)
        app.add_provider(self)

    def __repr__(self) -> str:
        return f"<Skills {sorted(self._skills)}>"

    def components(self, kind: Kind) -> Sequence[Any]:
        return self._listed if kind == "resources" else ()

    def component(self, kind: Kind, key: str) -> Any | None:
        return self._files.get(key) if kind == "resources" else None

    def __iter__(self) -> Any:
        return iter(self._skills.values())

    def get(self, name: str) -> Skill | None:
        return self._skills.get(name)

    # --- authoring ---------------------------------------------------------------------

    def add(self, skill: Skill) -> Skill:
        """Serve ``skill`` (replacing one of the same name); its files become resources
        (the server's clients hear ``notifications/resources/list_changed``)."""
        self._skills.pop(skill.name, None)
        self._skills[skill.name] = skill
        self._served()
        return skill

    def add_folder(self, folder: str | os.PathLike[str]) -> Skill:
        """Read and serve a skill folder now (blocking; at start-up)."""
        return self.add(Skill.from_folder(folder))

    async def load_folder(self, folder: str | os.PathLike[str]) -> Skill:
        """Read a skill folder in a worker thread, then serve it. Cancellation: the read
        finishes in its thread and is discarded; nothing is served."""
        skill = await trio.to_thread.run_sync(Skill.from_folder, folder)
        return self.add(skill)

    def remove(self, name: str) -> Skill:
        """Stop serving the skill ``name`` (``KeyError`` if there is none)."""
        skill = self._skills.pop(name)
        self._served()
        return skill

    async def refresh(self) -> list[str]:
        """Re-read every folder skill in a worker thread; serve the ones whose manifest
        changed (clients hear ``notifications/resources/list_changed``). Returns their
        names. Cancellation: a skill already replaced stays replaced."""
        changed = []
        for skill in list(self._skills.values()):
            if skill.folder is None:
                continue
            fresh = await trio.to_thread.run_sync(Skill.from_folder, skill.folder)
            if fresh.entry() != skill.entry():
                self.add(fresh)
                changed.append(fresh.name)
        return changed

    def _served(self) -> None:
        """Serve the files of the skills as they are now, and say so."""
        files = {}
        for skill in self._skills.values():
            for file in skill.files:
                resource = _resource(skill, file)
                files[resource.uri] = resource
        self._files = files
        self._listed = list(files.values())
        self.changed("resources")

    # --- serving -----------------------------------------------------------------------

    def _visible(self, ctx: Context) -> list[Skill]:
        auth = ctx.auth
        skills = sorted(self._skills.values(), key=lambda s: s.name)
        if isinstance(auth, AuthInfo) and auth.hide_unauthorized:
            skills = [s for s in skills if auth.allows("resources/read", s.uri)]
        return skills

    async def _list(self, ctx: Context) -> dict[str, Any]:
        params = ctx.request_context.params
        cursor = params.get("cursor") if isinstance(params, dict) else None
        page, next_cursor = paginate(
            self._visible(ctx),
            cursor if isinstance(cursor, str) else None,
            self.app.page_size,
            salt=f"{id(self)}skills/list",
            key=lambda s: s.name,
        )
        result: dict[str, Any] = {"skills": [s.entry() for s in page]}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return _cacheable(ctx, result)

    async def _get(self, ctx: Context) -> dict[str, Any]:
        uri = _uri_param(ctx)
        for skill in self._visible(ctx):
            if skill.uri == uri:
                return _cacheable(ctx, {"skill": skill.entry()})
        raise McpError(INVALID_PARAMS, f"No skill is served at {uri[:200]}", {"uri": uri})

    async def _read_directory(self, ctx: Context) -> dict[str, Any]:
        uri = _uri_param(ctx).rstrip("/")
        prefix = f"{wire.SCHEME}://"
        name, _, folder = (
            uri[len(prefix) :].partition("/") if uri.startswith(prefix) else ("", "", "")
        )
        skill = self._skills.get(name)
        if skill is None or skill not in self._visible(ctx):
            raise McpError(INVALID_PARAMS, f"{uri[:200]} is not a skill directory", {"uri": uri})
        inside = f"{folder}/" if folder else ""
        files: list[dict[str, Any]] = []
        folders: set[str] = set()
        for file in skill.files:
            if not file.path.startswith(inside):
                continue
            rest = file.path[len(inside) :]
            if "/" in rest:
                folders.add(rest.split("/", 1)[0])
                continue
            child = {"uri": wire.skill_uri(name, file.path), "name": rest, "size": len(file.data)}
            if file.mime_type:
                child["mimeType"] = file.mime_type
            files.append(child)
        if not files and not folders:
            raise McpError(INVALID_PARAMS, f"{uri[:200]} is not a skill directory", {"uri": uri})
        children = files + [
            {"uri": f"{uri}/{sub}", "name": sub, "mimeType": wire.DIRECTORY_MIME}
            for sub in sorted(folders)
        ]
        return _cacheable(ctx, {"resources": children})


def _uri_param(ctx: Context) -> str:
    params = ctx.request_context.params
    uri = params.get("uri") if isinstance(params, dict) else None
    if not isinstance(uri, str):
        raise McpError(INVALID_PARAMS, "Invalid params: 'uri' (a string) is required")
    return uri


def _cacheable(ctx: Context, result: dict[str, Any]) -> dict[str, Any]:
    """2026-07-28 results of the extension carry the cache attributes."""
    if ctx.stateless:
        result.update(ttlMs=0, cacheScope="private")
    return result


def _resource(skill: Skill, file: SkillFile) -> RegisteredResource:
    """The resource serving ``file`` of ``skill`` (``SKILL.md``: named and described by
    the skill's front matter)."""
    is_manifest = file.path == wire.SKILL_FILE
    content: str | bytes = file.data
    with contextlib.suppress(UnicodeDecodeError):
        content = file.data.decode()

    async def read() -> str | bytes:
        return content

    return RegisteredResource(
        wire.skill_uri(skill.name, file.path),
        read,
        name=skill.name if is_manifest else f"{skill.name}/{file.path}",
        description=skill.front_matter["description"]
        if is_manifest
        else f"{file.path}, a file of the skill {skill.name}",
        mime_type=file.mime_type,
        size=len(file.data),
    )

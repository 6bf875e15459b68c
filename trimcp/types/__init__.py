"""MCP wire types: frozen, slotted, keyword-only attrs classes (no I/O).

One set of classes covers every protocol revision from 2024-11-05 to 2025-11-25; fields
that only later revisions have are optional, and a few 2026-07-28 shapes are here as
types only. Convert to and from JSON data with :mod:`trimcp.serde`; the conventions the
converter relies on are listed in :mod:`trimcp.types.common`. The JSON-RPC envelopes
live in :mod:`trimcp.types.jsonrpc`.

Each name is imported from its submodule on first use (module ``__getattr__``), so a
process loads only the wire types it touches.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

#: public name -> the submodule that defines it
_LAZY: dict[str, str] = {
    "WireType": "trimcp.types.base",
    "Annotations": "trimcp.types.common",
    "Cursor": "trimcp.types.common",
    "EmptyResult": "trimcp.types.common",
    "Error": "trimcp.types.common",
    "Icon": "trimcp.types.common",
    "InputRequiredResult": "trimcp.types.common",
    "NotificationParams": "trimcp.types.common",
    "PaginatedRequestParams": "trimcp.types.common",
    "PaginatedResult": "trimcp.types.common",
    "ProgressToken": "trimcp.types.common",
    "RequestId": "trimcp.types.common",
    "RequestParams": "trimcp.types.common",
    "Result": "trimcp.types.common",
    "Role": "trimcp.types.common",
    "CompleteRequestParams": "trimcp.types.completion",
    "CompleteResult": "trimcp.types.completion",
    "Completion": "trimcp.types.completion",
    "CompletionArgument": "trimcp.types.completion",
    "CompletionContext": "trimcp.types.completion",
    "CompletionReference": "trimcp.types.completion",
    "PromptReference": "trimcp.types.completion",
    "ResourceTemplateReference": "trimcp.types.completion",
    "AudioContent": "trimcp.types.content",
    "BlobResourceContents": "trimcp.types.content",
    "ContentBlock": "trimcp.types.content",
    "EmbeddedResource": "trimcp.types.content",
    "ImageContent": "trimcp.types.content",
    "ResourceContents": "trimcp.types.content",
    "ResourceLink": "trimcp.types.content",
    "SamplingContent": "trimcp.types.content",
    "TextContent": "trimcp.types.content",
    "TextResourceContents": "trimcp.types.content",
    "ToolResultContent": "trimcp.types.content",
    "ToolUseContent": "trimcp.types.content",
    "BooleanSchema": "trimcp.types.elicitation",
    "ElicitationCompleteNotificationParams": "trimcp.types.elicitation",
    "ElicitationSchema": "trimcp.types.elicitation",
    "ElicitRequestFormParams": "trimcp.types.elicitation",
    "ElicitRequestParams": "trimcp.types.elicitation",
    "ElicitRequestURLParams": "trimcp.types.elicitation",
    "ElicitResult": "trimcp.types.elicitation",
    "ElicitValue": "trimcp.types.elicitation",
    "EnumOption": "trimcp.types.elicitation",
    "LegacyTitledEnumSchema": "trimcp.types.elicitation",
    "NumberSchema": "trimcp.types.elicitation",
    "PrimitiveSchemaDefinition": "trimcp.types.elicitation",
    "StringSchema": "trimcp.types.elicitation",
    "TitledEnumItems": "trimcp.types.elicitation",
    "TitledMultiSelectEnumSchema": "trimcp.types.elicitation",
    "TitledSingleSelectEnumSchema": "trimcp.types.elicitation",
    "UntitledEnumItems": "trimcp.types.elicitation",
    "UntitledMultiSelectEnumSchema": "trimcp.types.elicitation",
    "UntitledSingleSelectEnumSchema": "trimcp.types.elicitation",
    "ClientCapabilities": "trimcp.types.lifecycle",
    "ClientTaskRequests": "trimcp.types.lifecycle",
    "ClientTasksCapability": "trimcp.types.lifecycle",
    "DiscoverResult": "trimcp.types.lifecycle",
    "ElicitationCapability": "trimcp.types.lifecycle",
    "ElicitationTaskRequests": "trimcp.types.lifecycle",
    "Implementation": "trimcp.types.lifecycle",
    "InitializeRequestParams": "trimcp.types.lifecycle",
    "InitializeResult": "trimcp.types.lifecycle",
    "PromptsCapability": "trimcp.types.lifecycle",
    "ResourcesCapability": "trimcp.types.lifecycle",
    "RootsCapability": "trimcp.types.lifecycle",
    "SamplingCapability": "trimcp.types.lifecycle",
    "SamplingTaskRequests": "trimcp.types.lifecycle",
    "ServerCapabilities": "trimcp.types.lifecycle",
    "ServerTaskRequests": "trimcp.types.lifecycle",
    "ServerTasksCapability": "trimcp.types.lifecycle",
    "ToolsCapability": "trimcp.types.lifecycle",
    "ToolsTaskRequests": "trimcp.types.lifecycle",
    "LOGGING_LEVELS": "trimcp.types.logging",
    "LoggingLevel": "trimcp.types.logging",
    "LoggingMessageNotificationParams": "trimcp.types.logging",
    "SetLevelRequestParams": "trimcp.types.logging",
    "CancelledNotificationParams": "trimcp.types.notifications",
    "ProgressNotificationParams": "trimcp.types.notifications",
    "GetPromptRequestParams": "trimcp.types.prompts",
    "GetPromptResult": "trimcp.types.prompts",
    "ListPromptsResult": "trimcp.types.prompts",
    "Prompt": "trimcp.types.prompts",
    "PromptArgument": "trimcp.types.prompts",
    "PromptMessage": "trimcp.types.prompts",
    "ListResourcesResult": "trimcp.types.resources",
    "ListResourceTemplatesResult": "trimcp.types.resources",
    "ReadResourceRequestParams": "trimcp.types.resources",
    "ReadResourceResult": "trimcp.types.resources",
    "Resource": "trimcp.types.resources",
    "ResourceRequestParams": "trimcp.types.resources",
    "ResourceTemplate": "trimcp.types.resources",
    "ResourceUpdatedNotificationParams": "trimcp.types.resources",
    "SubscribeRequestParams": "trimcp.types.resources",
    "UnsubscribeRequestParams": "trimcp.types.resources",
    "ListRootsResult": "trimcp.types.roots",
    "Root": "trimcp.types.roots",
    "CreateMessageRequestParams": "trimcp.types.sampling",
    "CreateMessageResult": "trimcp.types.sampling",
    "ModelHint": "trimcp.types.sampling",
    "ModelPreferences": "trimcp.types.sampling",
    "SamplingMessage": "trimcp.types.sampling",
    "SamplingMessageContent": "trimcp.types.sampling",
    "ToolChoice": "trimcp.types.sampling",
    "SubscriptionFilter": "trimcp.types.subscriptions",
    "SubscriptionsAcknowledgedNotificationParams": "trimcp.types.subscriptions",
    "SubscriptionsListenRequestParams": "trimcp.types.subscriptions",
    "SubscriptionsListenResult": "trimcp.types.subscriptions",
    "RELATED_TASK_META_KEY": "trimcp.types.tasks",
    "CancelTaskRequestParams": "trimcp.types.tasks",
    "CancelTaskResult": "trimcp.types.tasks",
    "CreateTaskResult": "trimcp.types.tasks",
    "GetTaskPayloadRequestParams": "trimcp.types.tasks",
    "GetTaskRequestParams": "trimcp.types.tasks",
    "GetTaskResult": "trimcp.types.tasks",
    "ListTasksResult": "trimcp.types.tasks",
    "RelatedTaskMetadata": "trimcp.types.tasks",
    "Task": "trimcp.types.tasks",
    "TaskAugmentedRequestParams": "trimcp.types.tasks",
    "TaskMetadata": "trimcp.types.tasks",
    "TaskStatus": "trimcp.types.tasks",
    "TERMINAL_TASK_STATUSES": "trimcp.types.tasks",
    "TaskStatusNotificationParams": "trimcp.types.tasks",
    "CallToolRequestParams": "trimcp.types.tools",
    "CallToolResult": "trimcp.types.tools",
    "ListToolsResult": "trimcp.types.tools",
    "Tool": "trimcp.types.tools",
    "ToolAnnotations": "trimcp.types.tools",
    "ToolExecution": "trimcp.types.tools",
}

if TYPE_CHECKING:
    from trimcp.types.base import WireType as WireType
    from trimcp.types.common import Annotations as Annotations
    from trimcp.types.common import Cursor as Cursor
    from trimcp.types.common import EmptyResult as EmptyResult
    from trimcp.types.common import Error as Error
    from trimcp.types.common import Icon as Icon
    from trimcp.types.common import InputRequiredResult as InputRequiredResult
    from trimcp.types.common import NotificationParams as NotificationParams
    from trimcp.types.common import PaginatedRequestParams as PaginatedRequestParams
    from trimcp.types.common import PaginatedResult as PaginatedResult
    from trimcp.types.common import ProgressToken as ProgressToken
    from trimcp.types.common import RequestId as RequestId
    from trimcp.types.common import RequestParams as RequestParams
    from trimcp.types.common import Result as Result
    from trimcp.types.common import Role as Role
    from trimcp.types.completion import CompleteRequestParams as CompleteRequestParams
    from trimcp.types.completion import CompleteResult as CompleteResult
    from trimcp.types.completion import Completion as Completion
    from trimcp.types.completion import CompletionArgument as CompletionArgument
    from trimcp.types.completion import CompletionContext as CompletionContext
    from trimcp.types.completion import CompletionReference as CompletionReference
    from trimcp.types.completion import PromptReference as PromptReference
    from trimcp.types.completion import ResourceTemplateReference as ResourceTemplateReference
    from trimcp.types.content import AudioContent as AudioContent
    from trimcp.types.content import BlobResourceContents as BlobResourceContents
    from trimcp.types.content import ContentBlock as ContentBlock
    from trimcp.types.content import EmbeddedResource as EmbeddedResource
    from trimcp.types.content import ImageContent as ImageContent
    from trimcp.types.content import ResourceContents as ResourceContents
    from trimcp.types.content import ResourceLink as ResourceLink
    from trimcp.types.content import SamplingContent as SamplingContent
    from trimcp.types.content import TextContent as TextContent
    from trimcp.types.content import TextResourceContents as TextResourceContents
    from trimcp.types.content import ToolResultContent as ToolResultContent
    from trimcp.types.content import ToolUseContent as ToolUseContent
    from trimcp.types.elicitation import BooleanSchema as BooleanSchema
    from trimcp.types.elicitation import (
        ElicitationCompleteNotificationParams as ElicitationCompleteNotificationParams,
    )
    from trimcp.types.elicitation import ElicitationSchema as ElicitationSchema
    from trimcp.types.elicitation import ElicitRequestFormParams as ElicitRequestFormParams
    from trimcp.types.elicitation import ElicitRequestParams as ElicitRequestParams
    from trimcp.types.elicitation import ElicitRequestURLParams as ElicitRequestURLParams
    from trimcp.types.elicitation import ElicitResult as ElicitResult
    from trimcp.types.elicitation import ElicitValue as ElicitValue
    from trimcp.types.elicitation import EnumOption as EnumOption
    from trimcp.types.elicitation import LegacyTitledEnumSchema as LegacyTitledEnumSchema
    from trimcp.types.elicitation import NumberSchema as NumberSchema
    from trimcp.types.elicitation import PrimitiveSchemaDefinition as PrimitiveSchemaDefinition
    from trimcp.types.elicitation import StringSchema as StringSchema
    from trimcp.types.elicitation import TitledEnumItems as TitledEnumItems
    from trimcp.types.elicitation import TitledMultiSelectEnumSchema as TitledMultiSelectEnumSchema
    from trimcp.types.elicitation import (
        TitledSingleSelectEnumSchema as TitledSingleSelectEnumSchema,
    )
    from trimcp.types.elicitation import UntitledEnumItems as UntitledEnumItems
    from trimcp.types.elicitation import (
        UntitledMultiSelectEnumSchema as UntitledMultiSelectEnumSchema,
    )
    from trimcp.types.elicitation import (
        UntitledSingleSelectEnumSchema as UntitledSingleSelectEnumSchema,
    )
    from trimcp.types.lifecycle import ClientCapabilities as ClientCapabilities
    from trimcp.types.lifecycle import ClientTaskRequests as ClientTaskRequests
    from trimcp.types.lifecycle import ClientTasksCapability as ClientTasksCapability
    from trimcp.types.lifecycle import DiscoverResult as DiscoverResult
    from trimcp.types.lifecycle import ElicitationCapability as ElicitationCapability
    from trimcp.types.lifecycle import ElicitationTaskRequests as ElicitationTaskRequests
    from trimcp.types.lifecycle import Implementation as Implementation
    from trimcp.types.lifecycle import InitializeRequestParams as InitializeRequestParams
    from trimcp.types.lifecycle import InitializeResult as InitializeResult
    from trimcp.types.lifecycle import PromptsCapability as PromptsCapability
    from trimcp.types.lifecycle import ResourcesCapability as ResourcesCapability
    from trimcp.types.lifecycle import RootsCapability as RootsCapability
    from trimcp.types.lifecycle import SamplingCapability as SamplingCapability
    from trimcp.types.lifecycle import SamplingTaskRequests as SamplingTaskRequests
    from trimcp.types.lifecycle import ServerCapabilities as ServerCapabilities
    from trimcp.types.lifecycle import ServerTaskRequests as ServerTaskRequests
    from trimcp.types.lifecycle import ServerTasksCapability as ServerTasksCapability
    from trimcp.types.lifecycle import ToolsCapability as ToolsCapability
    from trimcp.types.lifecycle import ToolsTaskRequests as ToolsTaskRequests
    from trimcp.types.logging import LOGGING_LEVELS as LOGGING_LEVELS
    from trimcp.types.logging import LoggingLevel as LoggingLevel
    from trimcp.types.logging import (
        LoggingMessageNotificationParams as LoggingMessageNotificationParams,
    )
    from trimcp.types.logging import SetLevelRequestParams as SetLevelRequestParams
    from trimcp.types.notifications import (
        CancelledNotificationParams as CancelledNotificationParams,
    )
    from trimcp.types.notifications import ProgressNotificationParams as ProgressNotificationParams
    from trimcp.types.prompts import GetPromptRequestParams as GetPromptRequestParams
    from trimcp.types.prompts import GetPromptResult as GetPromptResult
    from trimcp.types.prompts import ListPromptsResult as ListPromptsResult
    from trimcp.types.prompts import Prompt as Prompt
    from trimcp.types.prompts import PromptArgument as PromptArgument
    from trimcp.types.prompts import PromptMessage as PromptMessage
    from trimcp.types.resources import ListResourcesResult as ListResourcesResult
    from trimcp.types.resources import ListResourceTemplatesResult as ListResourceTemplatesResult
    from trimcp.types.resources import ReadResourceRequestParams as ReadResourceRequestParams
    from trimcp.types.resources import ReadResourceResult as ReadResourceResult
    from trimcp.types.resources import Resource as Resource
    from trimcp.types.resources import ResourceRequestParams as ResourceRequestParams
    from trimcp.types.resources import ResourceTemplate as ResourceTemplate
    from trimcp.types.resources import (
        ResourceUpdatedNotificationParams as ResourceUpdatedNotificationParams,
    )
    from trimcp.types.resources import SubscribeRequestParams as SubscribeRequestParams
    from trimcp.types.resources import UnsubscribeRequestParams as UnsubscribeRequestParams
    from trimcp.types.roots import ListRootsResult as ListRootsResult
    from trimcp.types.roots import Root as Root
    from trimcp.types.sampling import CreateMessageRequestParams as CreateMessageRequestParams
    from trimcp.types.sampling import CreateMessageResult as CreateMessageResult
    from trimcp.types.sampling import ModelHint as ModelHint
    from trimcp.types.sampling import ModelPreferences as ModelPreferences
    from trimcp.types.sampling import SamplingMessage as SamplingMessage
    from trimcp.types.sampling import SamplingMessageContent as SamplingMessageContent
    from trimcp.types.sampling import ToolChoice as ToolChoice
    from trimcp.types.subscriptions import SubscriptionFilter as SubscriptionFilter
    from trimcp.types.subscriptions import (
        SubscriptionsAcknowledgedNotificationParams as SubscriptionsAcknowledgedNotificationParams,
    )
    from trimcp.types.subscriptions import (
        SubscriptionsListenRequestParams as SubscriptionsListenRequestParams,
    )
    from trimcp.types.subscriptions import SubscriptionsListenResult as SubscriptionsListenResult
    from trimcp.types.tasks import RELATED_TASK_META_KEY as RELATED_TASK_META_KEY
    from trimcp.types.tasks import TERMINAL_TASK_STATUSES as TERMINAL_TASK_STATUSES
    from trimcp.types.tasks import CancelTaskRequestParams as CancelTaskRequestParams
    from trimcp.types.tasks import CancelTaskResult as CancelTaskResult
    from trimcp.types.tasks import CreateTaskResult as CreateTaskResult
    from trimcp.types.tasks import GetTaskPayloadRequestParams as GetTaskPayloadRequestParams
    from trimcp.types.tasks import GetTaskRequestParams as GetTaskRequestParams
    from trimcp.types.tasks import GetTaskResult as GetTaskResult
    from trimcp.types.tasks import ListTasksResult as ListTasksResult
    from trimcp.types.tasks import RelatedTaskMetadata as RelatedTaskMetadata
    from trimcp.types.tasks import Task as Task
    from trimcp.types.tasks import TaskAugmentedRequestParams as TaskAugmentedRequestParams
    from trimcp.types.tasks import TaskMetadata as TaskMetadata
    from trimcp.types.tasks import TaskStatus as TaskStatus
    from trimcp.types.tasks import TaskStatusNotificationParams as TaskStatusNotificationParams
    from trimcp.types.tools import CallToolRequestParams as CallToolRequestParams
    from trimcp.types.tools import CallToolResult as CallToolResult
    from trimcp.types.tools import ListToolsResult as ListToolsResult
    from trimcp.types.tools import Tool as Tool
    from trimcp.types.tools import ToolAnnotations as ToolAnnotations
    from trimcp.types.tools import ToolExecution as ToolExecution

__all__ = sorted(_LAZY)  # loaded by __getattr__, for ``import *`` too


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


def load_all() -> dict[str, Any]:
    """Every public wire name, loaded (tests, and code that lists all the types)."""
    return {name: __getattr__(name) for name in _LAZY}


def loaded(name: str) -> Any:
    """The wire type ``name`` if its submodule is loaded, else ``None`` (a check such as
    "is this union ElicitRequestParams?" needs no import: an object of a module that
    is not loaded cannot be it)."""
    module = sys.modules.get(_LAZY[name])
    return None if module is None else getattr(module, name)

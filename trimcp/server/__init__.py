"""The server framework: decorators, Context, and the low-level handler registry."""

from trimcp.server.app import Server as Server
from trimcp.server.completion import MAX_VALUES as MAX_COMPLETION_VALUES
from trimcp.server.context import Context as Context
from trimcp.server.elicitation import ElicitationOutcome as ElicitationOutcome
from trimcp.server.prompts import RegisteredPrompt as RegisteredPrompt
from trimcp.server.prompts import assistant_message as assistant_message
from trimcp.server.prompts import user_message as user_message
from trimcp.server.resources import RegisteredResource as RegisteredResource
from trimcp.server.resources import RegisteredTemplate as RegisteredTemplate
from trimcp.server.resources import ResourceNotFound as ResourceNotFound
from trimcp.server.results import Audio as Audio
from trimcp.server.results import Image as Image
from trimcp.server.tools import AUTO as AUTO
from trimcp.server.tools import RegisteredTool as RegisteredTool
from trimcp.server.tools import ToolError as ToolError
from trimcp.server.typeforms import Field as Field
from trimcp.types import PromptMessage as PromptMessage

__all__ = [
    "AUTO",
    "MAX_COMPLETION_VALUES",
    "Audio",
    "Context",
    "ElicitationOutcome",
    "Field",
    "Image",
    "PromptMessage",
    "RegisteredPrompt",
    "RegisteredResource",
    "RegisteredTemplate",
    "RegisteredTool",
    "ResourceNotFound",
    "Server",
    "ToolError",
    "assistant_message",
    "user_message",
]

"""schemas.py BASE_URL API_KEY MODEL: schemas as applications write them, as pydantic models,
turned into JSON Schema by the official OpenAI Python SDK (parse() with response_format, and
pydantic_function_tool) and served by wspec with response_format and as a tool's parameters
with tool_choice "required" and named. Prints a JSON list: for each schema, way and seed,
whether the SDK parsed the reply and pydantic accepted it, or the error."""
import datetime
import enum
import json
import sys
import uuid
from typing import Annotated, Literal, Optional, Union

import openai
from pydantic import BaseModel, EmailStr, Field

base_url, api_key, model = sys.argv[1:4]
client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0)


# Nested models (in $defs, by $ref), optional (nullable) fields, enums, a discriminated union,
# formats, bounded strings and lists (the default model's context is 256 tokens).
class Item(BaseModel):
    sku: str = Field(max_length=6)
    qty: int = Field(ge=1, le=9)


class Customer(BaseModel):
    name: str = Field(max_length=10)
    vip: bool


class Order(BaseModel):
    id: int
    customer: Customer
    items: list[Item] = Field(min_length=1, max_length=2)
    note: Optional[str] = Field(max_length=8)


class Color(str, enum.Enum):
    red = "red"
    green = "green"
    blue = "blue"


class Circle(BaseModel):
    kind: Literal["circle"]
    r: float


class Square(BaseModel):
    kind: Literal["square"]
    side: int


class Shape(BaseModel):
    color: Color
    shape: Annotated[Union[Circle, Square], Field(discriminator="kind")]
    label: Union[Annotated[str, Field(max_length=6)], int]


class Stamp(BaseModel):
    id: uuid.UUID
    when: datetime.datetime


class Contact(BaseModel):
    mail: EmailStr


out = []
for cls in (Order, Shape, Stamp, Contact):
    name = cls.__name__.lower()
    tool = openai.pydantic_function_tool(cls, name=name, description=f"Record a {name}")
    ways = [
        ("response_format", {"response_format": cls}),
        ("required", {"tools": [tool], "tool_choice": "required", "parallel_tool_calls": False}),
        ("named", {"tools": [tool], "tool_choice": {"type": "function", "function": {"name": name}}, "parallel_tool_calls": False}),
    ]
    for way, extra in ways:
        for seed in (1,):
            r = {"lib": "pydantic", "schema": name, "way": way, "seed": seed}
            try:
                c = client.chat.completions.parse(model=model, messages=[{"role": "user", "content": f"Write a {name} as JSON."}],
                                                  temperature=1, seed=seed, max_tokens=200, **extra)
                m = c.choices[0].message
                r["finish"] = c.choices[0].finish_reason
                if way == "response_format":
                    r["text"] = m.content
                    r["valid"] = isinstance(m.parsed, cls) and cls.model_validate_json(m.content) is not None
                else:
                    call = m.tool_calls[0].function
                    r["text"] = call.arguments
                    r["valid"] = isinstance(call.parsed_arguments, cls) and cls.model_validate_json(call.arguments) is not None
            except Exception as e:  # noqa: BLE001 - every failure is reported, not raised
                r["error"] = f"{type(e).__name__}: {e}"
            out.append(r)
print(json.dumps(out))

"""What a domain template is (the templates themselves are in ``library.py``).

A domain is vocabulary only — company, resources with their id styles, a tenant, the
headers its traps use, metrics, enums and final-state words. Behaviour comes from the
capability axes (``axes/``), which dress themselves in a domain's words, so fourteen
domains times seven axes give worlds that do not read alike.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Resource:
    """A collection: ``plural`` in paths, ``singular`` in field names, ``prefix`` on ids."""

    plural: str
    singular: str
    prefix: str

    @property
    def id_field(self) -> str:
        """Field name of this resource's id (``hive_id``)."""
        return f"{self.singular.replace('-', '_')}_id"

    @property
    def camel_id(self) -> str:
        """The legacy camelCase spelling decoys use (``hiveId``)."""
        head, *rest = self.singular.split("-")
        return head + "".join(p.title() for p in rest) + "Id"


@dataclass(frozen=True, slots=True)
class Metric:
    """A measured quantity: snake name, camelCase drift name, unit, value range, decimals."""

    name: str
    camel: str
    unit: str
    low: float
    high: float
    decimals: int


@dataclass(frozen=True, slots=True)
class Domain:
    """Vocabulary of one API world."""

    key: str
    company: str
    blurb: str
    stem: str  # short stem for token/client ids
    tenant: Resource
    tenant_value: str
    region_header: str
    region_var: str
    region_value: str
    retry_header: str
    elevated_scope: str
    resources: tuple[Resource, ...]
    metrics: tuple[Metric, ...]
    enum_field: str
    enum_values: tuple[str, ...]
    enum_wrong: str
    done_words: tuple[str, ...]
    flag_words: tuple[str, ...]
    team: str

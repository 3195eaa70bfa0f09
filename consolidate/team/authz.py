"""Project isolation enforced by the team's Chroma server (its Python server, ``chromadb.app``).

Chroma's token authentication (``chromadb.auth.token_authn.TokenAuthenticationServerProvider``) tells
who a request comes from, with the tenant and databases its user lists in the credentials file;
its stock authorization providers check actions only. This provider checks the resource: a request
is allowed only on the user's tenant and databases, so a token given for project P
(``databases: [consolidate_P]``) can neither read nor write project Q. Load it on the server (which
needs consolidate installed) with::

    CHROMA_SERVER_AUTHN_PROVIDER=chromadb.auth.token_authn.TokenAuthenticationServerProvider
    CHROMA_SERVER_AUTHN_CREDENTIALS_FILE=/etc/chroma/users.yaml
    CHROMA_SERVER_AUTHZ_PROVIDER=consolidate.team.authz.DatabaseAuthorizationProvider

Imports chromadb and fastapi: only the server loads it.
"""

from __future__ import annotations

from chromadb.auth import AuthzAction, AuthzResource, ServerAuthorizationProvider, UserIdentity
from chromadb.config import System
from overrides import override  # Chroma's components require it on overriding methods


class DatabaseAuthorizationProvider(ServerAuthorizationProvider):
    """Allow a request only on the authenticated user's tenant and databases (``*`` allows all);
    raises fastapi's HTTPException 403 otherwise. Requests naming no database (listing the user's
    tenant) are allowed on the user's tenant."""

    def __init__(self, system: System) -> None:
        super().__init__(system)

    @override
    def authorize_or_raise(self, user: UserIdentity, action: AuthzAction, resource: AuthzResource) -> None:
        tenants_ok = user.tenant in (None, "*") or resource.tenant in (None, user.tenant)
        databases = user.databases or ["*"]
        databases_ok = "*" in databases or resource.database is None or resource.database in databases
        if tenants_ok and databases_ok:
            return
        from fastapi import HTTPException  # noqa: PLC0415 - heavy (anyio, fastapi, pydantic): loaded only when used

        raise HTTPException(status_code=403, detail="Forbidden: this token has no access to that database")

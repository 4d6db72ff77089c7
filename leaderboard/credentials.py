"""Passwords (scrypt) and API tokens (random, stored as sha256): no plain secret is stored.

>>> stored = hash_password("correct horse")
>>> verify_password("correct horse", stored), verify_password("wrong", stored)
(True, False)
>>> token = new_token()
>>> token.startswith("eb_") and len(token_hash(token)) == 64
True
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import secrets

__all__ = [
    "MIN_PASSWORD_LENGTH",
    "hash_password",
    "new_token",
    "refuse_password",
    "token_hash",
    "verify_password",
]

MIN_PASSWORD_LENGTH = 8
# scrypt's interactive-login parameters (RFC 7914 section 2): about 50 ms, 16 MiB.
_N, _R, _P = 2**14, 8, 1
_SALT_BYTES = 16
_KEY_BYTES = 32
_TOKEN_PREFIX = "eb_"


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(
        password.encode("utf-8"), salt=salt, n=n, r=r, p=p, dklen=_KEY_BYTES, maxmem=64 * 1024**2
    )


def hash_password(password: str) -> str:
    """``scrypt$N$r$p$salt$key`` (hex), to store in ``User.password_hash``."""
    salt = secrets.token_bytes(_SALT_BYTES)
    key = _scrypt(password, salt, _N, _R, _P)
    return f"scrypt${_N}${_R}${_P}${salt.hex()}${key.hex()}"


def verify_password(password: str, stored: str) -> bool:
    """Whether ``password`` matches ``stored``; an empty or foreign hash never matches."""
    parts = stored.split("$")
    if len(parts) != 6 or parts[0] != "scrypt":
        return False
    try:
        n, r, p = int(parts[1]), int(parts[2]), int(parts[3])
        salt, key = bytes.fromhex(parts[4]), bytes.fromhex(parts[5])
    except ValueError:
        return False
    return hmac.compare_digest(_scrypt(password, salt, n, r, p), key)


@functools.cache
def _decoy_hash() -> str:
    return hash_password(secrets.token_urlsafe(16))


def refuse_password(password: str) -> None:
    """Spend the time of a real check: for unknown names and token-only accounts, so
    that a refusal's timing does not tell which names exist."""
    verify_password(password, _decoy_hash())


def new_token() -> str:
    """A fresh API token; shown once, then only its :func:`token_hash` is kept."""
    return _TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()

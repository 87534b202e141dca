"""JSON answers are gzip-compressed for clients that accept it, across the whole HTTP app;
small answers and clients that do not ask get them as they are."""

from __future__ import annotations

import json

import httpx

from vpod.controller.transports.rest import GZIP_MINIMUM_BYTES

from .live import LivePod


def _raw(pod: LivePod, path: str, encoding: str | None) -> httpx.Response:
    headers = {"Accept-Encoding": encoding} if encoding else {"Accept-Encoding": "identity"}
    with pod.client() as client:
        return client.get(path, headers=headers)  # .content is decoded; content-length is not


def test_large_json_answers_are_gzipped_for_clients_that_accept_it(pod: LivePod) -> None:
    for path in ("/api/v1/admin/pod-map", "/openapi.json", "/api/v1/admin/agents"):
        plain = _raw(pod, path, None)
        assert plain.status_code == 200
        assert "content-encoding" not in plain.headers
        if len(plain.content) < GZIP_MINIMUM_BYTES:
            continue
        packed = _raw(pod, path, "gzip, deflate")
        assert packed.headers["content-encoding"] == "gzip", path
        assert "Accept-Encoding" in packed.headers["vary"]
        assert json.loads(packed.content) == json.loads(plain.content)
        wire = int(packed.headers["content-length"])
        assert wire < len(plain.content), (path, wire, len(plain.content))


def test_small_answers_are_sent_as_they_are(pod: LivePod) -> None:
    answer = _raw(pod, "/api/v1/version", "gzip")
    assert answer.status_code == 200
    assert "content-encoding" not in answer.headers


def test_httpx_clients_read_compressed_answers_unchanged(pod: LivePod) -> None:
    with pod.client() as client:  # httpx asks for gzip and decodes it
        answer = client.get("/openapi.json")
    assert answer.headers.get("content-encoding") == "gzip"
    assert answer.json()["info"]["title"] == "vpod controller API"

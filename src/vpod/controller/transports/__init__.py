"""Thin transports over the one service layer: gRPC user and admin APIs, REST/JSON."""

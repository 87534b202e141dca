"""The V-IPU agent (VIRM): gRPC service over an emulated IPU-Machine."""

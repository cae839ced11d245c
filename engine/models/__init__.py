"""The models: the allow-list, the encoder, and queries/keys per architecture."""

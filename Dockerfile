# The aiperf binary in a minimal image, for `aiperf kube generate` (docs/scale-out.md).
#
#   docker build -t aiperf-rs:0.1.0 .
#   docker tag aiperf-rs:0.1.0 REGISTRY/aiperf-rs:0.1.0 && docker push REGISTRY/aiperf-rs:0.1.0
#
# Built for musl and linked statically: the C parts (ring, zstd, mimalloc) compile with
# musl-gcc, so the binary needs no libc and runs on distroless/static. Multi-arch with
# `docker buildx build --platform linux/amd64,linux/arm64` (each platform builds natively
# under emulation; no cross toolchain).

FROM rust:1.95-bookworm AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends musl-tools \
    && rm -rf /var/lib/apt/lists/*
RUN rustup target add "$(uname -m)-unknown-linux-musl"
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p aiperf-cli --target "$(uname -m)-unknown-linux-musl" \
    && cp "target/$(uname -m)-unknown-linux-musl/release/aiperf" /aiperf

# CA certificates included (https:// targets); runs as uid 65532, which the manifests'
# fsGroup lets write to the results volume.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /aiperf /usr/local/bin/aiperf
ENTRYPOINT ["/usr/local/bin/aiperf"]
CMD ["--help"]

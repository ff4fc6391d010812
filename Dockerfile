# homebot's Home Assistant OS add-on image, built by the Supervisor on the device itself
# with the repository root as the build context (addon/README.md says why).
#
# The Supervisor may pass BUILD_FROM (its base image for the device's architecture);
# without it the default below is used. homebot is linked statically (musl), so it runs
# on either: it needs no libc, no CA bundle (rustls with its built-in roots) and no
# tzdata (the zones are bundled) from the base image.
ARG BUILD_FROM=alpine:3.21

FROM rust:1-alpine AS builder
RUN apk add --no-cache musl-dev gcc
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin homebot \
    && cp target/release/homebot /homebot \
    && strip /homebot

FROM ${BUILD_FROM}
COPY --from=builder /homebot /usr/bin/homebot
COPY addon/run.sh /run.sh
RUN chmod a+x /run.sh
# the workspace in the add-on's own persistent folder (kept in the add-on's backups)
ENV HOMEBOT_WORKSPACE=/data/workspace
CMD ["/run.sh"]

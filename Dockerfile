# Stormscale operator image: the planner, the Kopf operator (and the Storm exporter) and the aggregation's
# single-process engine (stormscale-aggregation without its PySpark extra): no Spark, no Java.
#
#   docker build -t stormscale/operator:0.1.0 .
#
# The image runs as a non-root user and needs no writable root filesystem (the chart mounts an
# emptyDir at /tmp). Its contents are installed by operator/image/install.sh from the hash-locked
# operator/requirements.lock (pip --require-hashes); tests/integration/test_packaging.py checks the built
# image's contents against that lock and starts its entry point from the image's root filesystem (buildah,
# no Docker engine in CI).
#
# The base image is named by tag; to pin it by digest, look the digest up where you pull from
# (`docker buildx imagetools inspect python:3.11-slim`) and build with
# `--build-arg PYTHON_IMAGE=python:3.11-slim@sha256:<digest>`.
ARG PYTHON_IMAGE=python:3.11-slim
FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY planner/ planner/
COPY spark/ spark/
COPY operator/ operator/
RUN sh operator/image/install.sh /opt/stormscale

FROM ${PYTHON_IMAGE}
COPY --from=build /opt/stormscale /opt/stormscale
# The user has a name: Kopf names the operator's identity after it (getpass.getuser), which fails for a
# uid without a passwd entry. USER covers a cluster that runs the pod under another uid (runAsUser).
RUN groupadd --system --gid 10001 stormscale \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin stormscale
ENV PATH=/opt/stormscale/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    USER=stormscale
USER 10001:10001
EXPOSE 8080
ENTRYPOINT ["kopf"]
CMD ["run", "--standalone", "--all-namespaces", "--liveness=http://0.0.0.0:8080/healthz", "--module=stormscale.operator.handlers"]

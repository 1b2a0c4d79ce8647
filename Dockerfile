# syntax=docker/dockerfile:1
# rayop operator image: `docker build -t rayop:0.1.0 .`
# The entrypoint is `rayop run`; the Deployment (deploy/ or helm/rayop) passes the flags.

# --- build: one wheel for rayop and one for each dependency ---------------------------------
# Only the operator's dependencies: no extras (the embedded control plane's protobuf and the
# benchmark's matplotlib and psutil are `rayop[sim]` and `rayop[bench]`; `rayop run` needs neither).
FROM python:3.11-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip wheel --wheel-dir /wheels .

# --- runtime: the wheels installed into a slim Python, run as a non-root user ---------------
FROM python:3.11-slim AS runtime
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-index --find-links /wheels rayop \
    && python -m compileall -q /usr/local/lib/python3.11/site-packages
USER 65532:65532
EXPOSE 8080 8082
ENTRYPOINT ["rayop", "run"]

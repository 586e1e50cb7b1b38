# The kenning-encounter server with the Neo4j driver; see docker-compose.yml.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY . .
RUN pip install ".[neo4j]" \
    && useradd --create-home --uid 10001 kenning \
    && mkdir -p /data/sidecar \
    && chown -R kenning /data

# A fresh named volume on /data starts as a copy of this directory, owner included.
USER kenning
WORKDIR /data
ENV KENNING_ENCOUNTER_DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 8765

CMD ["kenning-encounter", "serve", "--store", "neo4j", "--host", "0.0.0.0"]

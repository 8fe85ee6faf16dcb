# One image, every target: `magpie run --target T` (see compose.yaml).
FROM mcr.microsoft.com/dotnet/sdk:10.0 AS build
RUN apt-get update && apt-get install -y --no-install-recommends build-essential zlib1g-dev libssl-dev nodejs npm \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY scripts/build-librdkafka.sh scripts/
RUN MAGPIE_NATIVE_DIR=/native bash scripts/build-librdkafka.sh
COPY . .
RUN dotnet publish magpie -c Release -o /app

FROM mcr.microsoft.com/dotnet/aspnet:10.0
# librdkafka links zlib; OpenSSL is already in the .NET runtime image (indexes are Lucene.Net, in-process).
# curl serves compose's health checks (GET /readyz).
RUN apt-get update && apt-get install -y --no-install-recommends zlib1g curl \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /native/librdkafka.so.1 /usr/local/lib/librdkafka.so.1
COPY --from=build /app /app
WORKDIR /app
ENV MAGPIE__DATADIR=/data MAGPIE__HTTPPORT=8080
VOLUME /data
# 8080: HTTP (API, /metrics, /healthz, /readyz); 5433: the query target's PostgreSQL wire endpoint.
EXPOSE 8080 5433
ENTRYPOINT ["dotnet", "/app/magpie.dll"]
CMD ["run"]

# One image, every target: `magpie run --target T` (see compose.yaml).
FROM mcr.microsoft.com/dotnet/sdk:10.0 AS build
WORKDIR /src
COPY . .
# For this machine's runtime only (not every platform's native libraries: a quarter of the size), and what the build
# left (bin, obj, the package cache) removed in the same step, so no layer keeps it.
RUN dotnet publish magpie -c Release -o /app --use-current-runtime --self-contained false \
    && dotnet nuget locals all --clear >/dev/null && rm -rf /src

FROM mcr.microsoft.com/dotnet/aspnet:10.0
# librdkafka comes with the app (librdkafka.redist); curl serves compose's health checks (GET /readyz).
RUN apt-get update && apt-get install -y --no-install-recommends curl \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /app /app
WORKDIR /app
# In a container loopback reaches nobody: listen on every interface, which Magpie allows only with an API key
# (magpie keys create, see compose.yaml's keys service) or with --unsecured.
ENV MAGPIE__DATADIR=/data MAGPIE__HTTPPORT=8080 MAGPIE__BINDADDRESS=*
VOLUME /data
# 8080: HTTP (API, /metrics, /healthz, /readyz); 5433: the query target's PostgreSQL wire endpoint.
EXPOSE 8080 5433
ENTRYPOINT ["dotnet", "/app/magpie.dll"]
CMD ["run"]

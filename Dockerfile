# One image, every target: `magpie run --target T` (see compose.yaml).
FROM mcr.microsoft.com/dotnet/sdk:10.0 AS build
WORKDIR /src
COPY . .
RUN dotnet publish magpie -c Release -o /app

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

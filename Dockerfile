# One image holds every chargeonce binary; docker-compose.yml picks the one
# each service runs with its command.
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/ ./cmd/api ./cmd/apikey ./cmd/worker ./cmd/fakeprovider ./cmd/temporal-setup ./cmd/rollout ./starter

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
USER nonroot

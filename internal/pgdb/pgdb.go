// Package pgdb creates throwaway PostgreSQL databases, so that every test and
// every chaos run gets an empty database of its own on a shared server.
package pgdb

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Fresh creates an empty database named prefix followed by a random suffix,
// with the role of admin, a PostgreSQL URL. It returns the new database's
// URL and a function that drops it.
func Fresh(ctx context.Context, admin, prefix string) (string, func(context.Context) error, error) {
	u, err := url.Parse(admin)
	if err != nil {
		// The URL may hold a password: the parse error, which quotes it,
		// is not passed on.
		return "", nil, errors.New("pgdb: the database URL does not parse")
	}
	name := prefix + strings.ReplaceAll(uuid.NewString(), "-", "")
	if err := exec(ctx, admin, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("pgdb: create database %s: %w", name, err)
	}
	drop := func(ctx context.Context) error {
		// FORCE ends the connections a killed process may have left behind.
		if err := exec(ctx, admin, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("pgdb: drop database %s: %w", name, err)
		}
		return nil
	}
	u.Path = "/" + name
	return u.String(), drop, nil
}

// exec runs one statement on its own connection to the admin database.
func exec(ctx context.Context, admin, statement string) error {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, statement)
	return err
}

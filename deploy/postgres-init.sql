-- Runs once, when the PostgreSQL volume is created: the merchant database
-- of chargeonce beside Temporal's own databases.
CREATE ROLE chargeonce LOGIN PASSWORD 'chargeonce';
CREATE DATABASE chargeonce OWNER chargeonce;

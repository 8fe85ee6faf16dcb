-- PostgreSQL's catalog functions, as DuckDB macros over the catalog tables (PgCatalog.sql); the session's own (current_setting,
-- version, current_database, pg_get_userbyid) are written for each statement (PgSessionCatalog). What Magpie cannot answer
-- truthfully (sizes, backend pids, server addresses) is not defined here, so it is refused as an unknown function rather than
-- answered wrongly.
-- The object identifier types, as the oids they hold (a name cast to one is refused: Magpie has no name lookup for them).
CREATE TYPE regclass AS BIGINT;
CREATE TYPE regtype AS BIGINT;
CREATE TYPE regproc AS BIGINT;
CREATE TYPE regprocedure AS BIGINT;
CREATE TYPE regnamespace AS BIGINT;
CREATE TYPE regrole AS BIGINT;
CREATE TYPE regoper AS BIGINT;
CREATE MACRO current_schema() AS 'public';
CREATE MACRO current_schemas(implicit) AS CASE WHEN implicit THEN ['pg_catalog', 'public'] ELSE ['public'] END;
CREATE MACRO pg_table_is_visible(o) AS true;
CREATE MACRO pg_type_is_visible(o) AS true;
CREATE MACRO pg_function_is_visible(o) AS true;
CREATE MACRO pg_is_in_recovery() AS false;
CREATE MACRO has_table_privilege(t, p) AS true, (u, t, p) AS true;
CREATE MACRO has_schema_privilege(s, p) AS true, (u, s, p) AS true;
CREATE MACRO has_database_privilege(d, p) AS true, (u, d, p) AS true;
CREATE MACRO pg_encoding_to_char(e) AS CASE e WHEN 6 THEN 'UTF8' WHEN 0 THEN 'SQL_ASCII' ELSE '' END;
-- Nothing in Magpie has an expression, a comment, an index, a constraint, a trigger or a view definition.
CREATE MACRO pg_get_expr(e, r) AS NULL::VARCHAR, (e, r, pretty) AS NULL::VARCHAR;
CREATE MACRO obj_description(o) AS NULL::VARCHAR, (o, c) AS NULL::VARCHAR;
CREATE MACRO col_description(o, n) AS NULL::VARCHAR;
CREATE MACRO shobj_description(o, c) AS NULL::VARCHAR;
CREATE MACRO pg_get_indexdef(o) AS NULL::VARCHAR, (o, c, pretty) AS NULL::VARCHAR;
CREATE MACRO pg_get_constraintdef(o) AS NULL::VARCHAR, (o, pretty) AS NULL::VARCHAR;
CREATE MACRO pg_get_triggerdef(o) AS NULL::VARCHAR, (o, pretty) AS NULL::VARCHAR;
CREATE MACRO pg_get_viewdef(o) AS NULL::VARCHAR, (o, pretty) AS NULL::VARCHAR;
CREATE MACRO pg_get_partkeydef(o) AS NULL::VARCHAR;
CREATE MACRO pg_get_statisticsobjdef_columns(o) AS NULL::VARCHAR;
-- PostgreSQL's display names of types (format_type), arrays as their element's name with [].
CREATE MACRO magpie_type_display(n) AS CASE n
    WHEN 'bool' THEN 'boolean' WHEN 'int2' THEN 'smallint' WHEN 'int4' THEN 'integer' WHEN 'int8' THEN 'bigint'
    WHEN 'float4' THEN 'real' WHEN 'float8' THEN 'double precision' WHEN 'varchar' THEN 'character varying'
    WHEN 'bpchar' THEN 'character' WHEN 'char' THEN '"char"' WHEN 'timestamptz' THEN 'timestamp with time zone'
    WHEN 'timestamp' THEN 'timestamp without time zone' WHEN 'timetz' THEN 'time with time zone'
    WHEN 'time' THEN 'time without time zone' WHEN 'varbit' THEN 'bit varying' ELSE n END;
CREATE MACRO format_type(t, m) AS (SELECT CASE WHEN x.typcategory = 'A' AND x.typelem <> 0 THEN magpie_type_display(e.typname) || '[]' ELSE magpie_type_display(x.typname) END
    FROM pg_type x LEFT JOIN pg_type e ON e.oid = x.typelem WHERE x.oid = t);
CREATE MACRO quote_ident(s) AS CASE WHEN regexp_full_match(s, '[a-z_][a-z0-9_]*') AND NOT magpie_quoted_keyword(s) THEN s ELSE '"' || replace(s, '"', '""') || '"' END;
-- Arrays: PostgreSQL's functions over one-dimensional arrays, and string_to_array in FROM (one row, one column).
CREATE MACRO array_lower(a, d) AS CASE WHEN d = 1 AND len(a) > 0 THEN 1 END;
CREATE MACRO array_upper(a, d) AS CASE WHEN d = 1 AND len(a) > 0 THEN len(a) END;
CREATE MACRO string_to_array(s, d) AS TABLE SELECT string_split(s, d) AS string_to_array;
-- parse_ident('"My Table"') = ['My Table'], parse_ident('Public.t') = ['public', 't']: quoted parts as written, the rest in lower case.
CREATE MACRO parse_ident(s) AS list_transform(regexp_extract_all(s, '"(?:[^"]|"")*"|[^."]+'),
    lambda p: CASE WHEN starts_with(p, '"') THEN replace(substring(p, 2, length(p) - 2), '""', '"') ELSE lower(trim(p)) END);
CREATE MACRO pg_relation_is_publishable(o) AS false;
CREATE MACRO pg_get_partition_constraintdef(o) AS NULL::VARCHAR;
CREATE MACRO pg_get_ruledef(o) AS NULL::VARCHAR, (o, pretty) AS NULL::VARCHAR;
CREATE MACRO pg_get_function_identity_arguments(o) AS NULL::VARCHAR;
CREATE MACRO pg_get_function_arguments(o) AS NULL::VARCHAR;
CREATE MACRO pg_get_function_result(o) AS NULL::VARCHAR;

-- Used by generate.sh: builds the DuckDB script for Magpie's catalogs from this server's own catalogs.
CREATE TABLE template (c_text text, c_float8 float8, c_timestamptz timestamptz, c_int8 int8, c_int4 int4, c_bool bool, c_json json);

-- A PostgreSQL type as the DuckDB type of its column (a domain as its base type, as PostgreSQL sends it on the wire).
CREATE FUNCTION duck_type(t oid) RETURNS text LANGUAGE sql AS $$
  SELECT CASE
    WHEN b.typname = 'int2vector' THEN 'SMALLINT[]'
    WHEN b.typname = 'oidvector' THEN 'BIGINT[]'
    WHEN b.typcategory = 'A' THEN duck_type(b.typelem) || '[]'
    WHEN b.typname = 'int2' THEN 'SMALLINT'
    WHEN b.typname = 'int4' THEN 'INTEGER'
    WHEN b.typname IN ('int8', 'oid', 'regproc', 'regtype', 'regclass', 'xid', 'xid8', 'cid', 'pg_lsn') THEN 'BIGINT'
    WHEN b.typname = 'float4' THEN 'REAL'
    WHEN b.typname = 'float8' THEN 'DOUBLE'
    WHEN b.typname = 'bool' THEN 'BOOLEAN'
    WHEN b.typname = 'timestamptz' THEN 'TIMESTAMPTZ'
    ELSE 'VARCHAR' END
  FROM pg_type t JOIN pg_type b ON b.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END
  WHERE t.oid = $1 $$;

-- An SQL expression giving a column's value as a DuckDB literal.
CREATE FUNCTION duck_value(col text, t oid) RETURNS text LANGUAGE sql AS $$
  SELECT CASE
    WHEN d LIKE '%[]' THEN format($f$coalesce('[' || (SELECT string_agg(%s, ', ') FROM unnest(%s) e) || ']', 'NULL')$f$,
      CASE WHEN d LIKE 'VARCHAR%' THEN 'quote_literal(e)' ELSE 'e' END,
      CASE WHEN d IN ('SMALLINT[]', 'BIGINT[]') AND (SELECT typcategory FROM pg_type WHERE oid = t) <> 'A'
        THEN format('string_to_array(%I::text, '' '')', col) ELSE format('%I::text[]', col) END)
    WHEN (SELECT typname FROM pg_type WHERE oid = t) IN ('regproc', 'regtype', 'regclass') THEN format('coalesce(%I::oid::text, ''NULL'')', col)
    WHEN d IN ('SMALLINT', 'INTEGER', 'BIGINT', 'REAL', 'DOUBLE', 'BOOLEAN') THEN format('coalesce(%I::text, ''NULL'')', col)
    WHEN d = 'TIMESTAMPTZ' THEN format('coalesce(quote_literal(%I::text) || ''::TIMESTAMPTZ'', ''NULL'')', col)
    ELSE format('quote_nullable(%I::text)', col) END
  FROM (SELECT duck_type(t) AS d) x $$;

-- CREATE TABLE for a catalog relation, under the name DuckDB will see, plus INSERTs for the rows WHERE selects.
CREATE FUNCTION duck_table(ord int, rel regclass, name text, rows_where text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  ddl text; expr text; result text := '';
BEGIN
  SELECT CASE WHEN rows_where IS NULL AND ord BETWEEN 40 AND 59 THEN 'CREATE TEMP TABLE ' ELSE 'CREATE TABLE ' END || name || ' (' || string_agg(format('%I %s', attname, duck_type(atttypid)), ', ' ORDER BY attnum) || ');',
         string_agg(duck_value(attname, atttypid), ' || '', '' || ' ORDER BY attnum)
    INTO ddl, expr
    FROM pg_attribute WHERE attrelid = rel AND attnum > 0 AND NOT attisdropped;
  result := ddl || E'\n';
  IF rows_where IS NOT NULL THEN
    EXECUTE format('SELECT string_agg(''('' || %s || '')'', E'',\n'') FROM %s WHERE %s', expr, rel, rows_where) INTO expr;
    IF expr IS NOT NULL THEN result := result || 'INSERT INTO ' || name || E' VALUES\n' || expr || E';\n'; END IF;
  END IF;
  RETURN result;
END $$;

CREATE FUNCTION magpie_catalog() RETURNS text LANGUAGE sql AS $$
  SELECT string_agg(duck_table(ord, rel::regclass, name, rows_where), E'\n' ORDER BY ord) FROM (VALUES
    -- Built in: the same rows as PostgreSQL.
    (1, 'pg_catalog.pg_type', 'pg_type', 'true'),
    (2, 'pg_catalog.pg_namespace', 'pg_namespace', $w$nspname IN ('pg_catalog', 'public', 'information_schema')$w$),
    (3, 'pg_catalog.pg_proc', 'pg_proc', 'oid IN (SELECT typinput FROM pg_type UNION SELECT typoutput FROM pg_type UNION SELECT typreceive FROM pg_type UNION SELECT typsend FROM pg_type)'),
    (4, 'pg_catalog.pg_range', 'pg_range', 'true'),
    (5, 'pg_catalog.pg_am', 'pg_am', 'true'),
    (6, 'pg_catalog.pg_collation', 'pg_collation', $w$collname IN ('default', 'C', 'POSIX', 'ucs_basic')$w$),
    (7, 'pg_catalog.pg_tablespace', 'pg_tablespace', 'true'),
    -- Nothing of these exists in Magpie (no constraints, triggers, extensions, …): their columns, no rows.
    (10, 'pg_catalog.pg_attrdef', 'pg_attrdef', NULL), (11, 'pg_catalog.pg_index', 'pg_index', NULL),
    (12, 'pg_catalog.pg_constraint', 'pg_constraint', NULL), (13, 'pg_catalog.pg_trigger', 'pg_trigger', NULL),
    (14, 'pg_catalog.pg_policy', 'pg_policy', NULL), (15, 'pg_catalog.pg_statistic_ext', 'pg_statistic_ext', NULL),
    (16, 'pg_catalog.pg_inherits', 'pg_inherits', NULL), (17, 'pg_catalog.pg_enum', 'pg_enum', NULL),
    (18, 'pg_catalog.pg_description', 'pg_description', NULL), (19, 'pg_catalog.pg_publication', 'pg_publication', NULL),
    (20, 'pg_catalog.pg_publication_rel', 'pg_publication_rel', NULL), (21, 'pg_catalog.pg_publication_namespace', 'pg_publication_namespace', NULL),
    (22, 'pg_catalog.pg_partitioned_table', 'pg_partitioned_table', NULL), (23, 'pg_catalog.pg_extension', 'pg_extension', NULL),
    (24, 'pg_catalog.pg_depend', 'pg_depend', NULL), (25, 'pg_catalog.pg_rewrite', 'pg_rewrite', NULL),
    (26, 'pg_catalog.pg_sequence', 'pg_sequence', NULL), (27, 'pg_catalog.pg_foreign_table', 'pg_foreign_table', NULL),
    (28, 'pg_catalog.pg_event_trigger', 'pg_event_trigger', NULL), (29, 'pg_catalog.pg_views', 'pg_views', NULL),
    (30, 'pg_catalog.pg_matviews', 'pg_matviews', NULL), (31, 'pg_catalog.pg_indexes', 'pg_indexes', NULL),
    (32, 'pg_catalog.pg_auth_members', 'pg_auth_members', NULL), (33, 'pg_catalog.pg_shdescription', 'pg_shdescription', NULL),
    (34, 'information_schema.views', 'information_schema_views', NULL),
    (35, 'information_schema.table_constraints', 'information_schema_table_constraints', NULL),
    (36, 'information_schema.key_column_usage', 'information_schema_key_column_usage', NULL),
    (37, 'information_schema.routines', 'information_schema_routines', NULL),
    -- Written per index and session (temporary: each statement's own): the columns, no rows; a template row each (per column type) that Magpie copies.
    (40, 'pg_catalog.pg_class', 'pg_class', NULL), (41, 'pg_catalog.pg_attribute', 'pg_attribute', NULL),
    (42, 'pg_catalog.pg_tables', 'pg_tables', NULL), (43, 'pg_catalog.pg_database', 'pg_database', NULL),
    (44, 'pg_catalog.pg_settings', 'pg_settings', NULL), (45, 'pg_catalog.pg_roles', 'pg_roles', NULL),
    (46, 'pg_catalog.pg_user', 'pg_user', NULL),
    (47, 'information_schema.tables', 'information_schema_tables', NULL),
    (48, 'information_schema.columns', 'information_schema_columns', NULL),
    (49, 'information_schema.schemata', 'information_schema_schemata', NULL),
    (60, 'pg_catalog.pg_class', 'magpie_template.pg_class', $w$relname = 'template'$w$),
    (61, 'pg_catalog.pg_attribute', 'magpie_template.pg_attribute', $w$attrelid = 'template'::regclass AND attnum > 0$w$),
    (62, 'pg_catalog.pg_tables', 'magpie_template.pg_tables', $w$tablename = 'template'$w$),
    (63, 'pg_catalog.pg_database', 'magpie_template.pg_database', $w$datname = 'postgres'$w$),
    (64, 'pg_catalog.pg_settings', 'magpie_template.pg_settings', $w$name IN ('server_version', 'server_version_num', 'server_encoding', 'client_encoding', 'search_path', 'TimeZone', 'DateStyle', 'integer_datetimes', 'standard_conforming_strings', 'transaction_isolation', 'max_identifier_length', 'default_transaction_read_only', 'application_name')$w$),
    (65, 'pg_catalog.pg_roles', 'magpie_template.pg_roles', $w$rolname = 'postgres'$w$),
    (66, 'pg_catalog.pg_user', 'magpie_template.pg_user', $w$usename = 'postgres'$w$),
    (67, 'information_schema.tables', 'magpie_template.tables', $w$table_name = 'template'$w$),
    (68, 'information_schema.columns', 'magpie_template.columns', $w$table_name = 'template'$w$),
    (69, 'information_schema.schemata', 'magpie_template.schemata', $w$schema_name IN ('pg_catalog', 'public', 'information_schema')$w$)
  ) v(ord, rel, name, rows_where) $$;

-- quote_ident quotes a name that is a keyword PostgreSQL reserves in any way (all but its unreserved keywords).
CREATE FUNCTION magpie_keywords() RETURNS text LANGUAGE sql AS $$
  SELECT 'CREATE MACRO magpie_quoted_keyword(w) AS w IN (' || string_agg(quote_literal(word), ', ' ORDER BY word) || E');\n'
  FROM pg_get_keywords() WHERE catcode <> 'U' $$;

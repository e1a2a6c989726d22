-- Version 13 (step 14 replaces it with group_commits.sql): the count of the
-- transactions that changed a location, which
-- the read cache's answers (the location records) compare instead of every
-- commit (db::Db::same of Tables::LOCATIONS), so that a workspace's writes leave them
-- cached. AFTER STATEMENT, once per transaction (quayside.location_counted),
-- on the change_log row that the counting trigger (schema.sql), or the writer's
-- BEGIN, has locked already. SQLite's counterpart is the writer's row hook
-- (src/db/preupdate.rs, which notes the group of each table, db::stamp::Tables).
CREATE FUNCTION quayside_count_location() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('quayside.location_counted', true) IS DISTINCT FROM 'yes' THEN
        UPDATE change_log SET location_commits = location_commits + 1 WHERE id = 1;
        PERFORM set_config('quayside.location_counted', 'yes', true);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER locations_count AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON locations
    FOR EACH STATEMENT EXECUTE FUNCTION quayside_count_location();

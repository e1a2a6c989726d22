-- Version 14: for each group of tables that a cache is made of
-- (db::stamp::Tables::COUNTED), the count of the transactions that changed a
-- row of it, which that cache compares instead of every commit (db::Db::same):
-- the location records of the read cache, the workspaces and organizations of
-- a workspace's scope, the sessions and accounts of a cached session. So a
-- workspace's writes leave them all cached. The trigger's argument is the
-- group's column of change_log; AFTER STATEMENT, once per transaction
-- (quayside.<column>, which bookkeeping sets beforehand: db::uncounted), on
-- the change_log row that the counting trigger (schema.sql), or the writer's
-- BEGIN, has locked already. SQLite's counterpart is the writer's row hook
-- (src/db/preupdate.rs, which notes the group of each table,
-- db::stamp::Tables::WATCHED); tests/it/pg/schema.rs holds these triggers to
-- that list.
CREATE FUNCTION quayside_count_group() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('quayside.' || TG_ARGV[0], true) IS DISTINCT FROM 'yes' THEN
        CASE TG_ARGV[0]
            WHEN 'location_commits' THEN
                UPDATE change_log SET location_commits = location_commits + 1 WHERE id = 1;
            WHEN 'workspace_commits' THEN
                UPDATE change_log SET workspace_commits = workspace_commits + 1 WHERE id = 1;
            WHEN 'session_commits' THEN
                UPDATE change_log SET session_commits = session_commits + 1 WHERE id = 1;
        END CASE;
        PERFORM set_config('quayside.' || TG_ARGV[0], 'yes', true);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER quayside_count_group AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON locations
    FOR EACH STATEMENT EXECUTE FUNCTION quayside_count_group('location_commits');
CREATE TRIGGER quayside_count_group AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON workspaces
    FOR EACH STATEMENT EXECUTE FUNCTION quayside_count_group('workspace_commits');
CREATE TRIGGER quayside_count_group AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON organizations
    FOR EACH STATEMENT EXECUTE FUNCTION quayside_count_group('workspace_commits');
CREATE TRIGGER quayside_count_group AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON sessions
    FOR EACH STATEMENT EXECUTE FUNCTION quayside_count_group('session_commits');
CREATE TRIGGER quayside_count_group AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON accounts
    FOR EACH STATEMENT EXECUTE FUNCTION quayside_count_group('session_commits');

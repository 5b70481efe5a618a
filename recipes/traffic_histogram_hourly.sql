-- Request log -> one histogram per hour, to compare the busy hours with the quiet ones.
-- Portable: runs unchanged on DuckDB, Spark SQL, Trino and BigQuery (tested on DuckDB).
--
-- In:  request_log(timestamp TIMESTAMP, prompt_tokens integer). Hours are in the
--      engine's session time zone (UTC on BigQuery). Epoch numbers must become a
--      TIMESTAMP first, with your engine's own function (not portable: to_timestamp,
--      from_unixtime, TIMESTAMP_SECONDS).
-- Out: log_date, log_hour  the day and the hour of day (0-23) the requests arrived in
--      le, requests        the histogram of that hour, as in traffic_histogram.sql
-- Uploaded whole, the app adds the hours up (the same as traffic_histogram.sql); keep
-- one hour's rows (WHERE log_date = ... AND log_hour = ...) to look at that hour alone.
WITH lengths AS (
  SELECT
    CAST(timestamp AS DATE) AS log_date,
    EXTRACT(HOUR FROM timestamp) AS log_hour,
    prompt_tokens + MOD(256 - MOD(prompt_tokens, 256), 256) AS le
  FROM request_log
  WHERE prompt_tokens IS NOT NULL AND prompt_tokens >= 0 AND timestamp IS NOT NULL
)
SELECT log_date, log_hour, le, COUNT(*) AS requests
FROM lengths
GROUP BY log_date, log_hour, le
ORDER BY log_date, log_hour, le

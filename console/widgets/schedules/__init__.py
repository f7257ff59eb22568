"""The schedules view: periodic jobs with their cron, last run and next run."""

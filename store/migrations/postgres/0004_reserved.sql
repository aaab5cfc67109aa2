-- Version 4 is the webhook migration of another branch; this placeholder
-- keeps the versions contiguous until that branch is merged, and is deleted
-- then.
SELECT 1;

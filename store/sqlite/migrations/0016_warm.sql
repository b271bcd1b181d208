-- 0016: warm jobs (docs/warm.md): a policy that runs every attempt cold
-- (rm.Policy.Cold), and the workspace slot an attempt ran in
-- (rm.Attempt.Slot, "owner/name#n"; '' for a cold attempt).

ALTER TABLE policies ADD COLUMN cold INTEGER NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN slot TEXT NOT NULL DEFAULT '';

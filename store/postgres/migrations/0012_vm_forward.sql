-- 0012: the host services a VM policy's guests reach beyond the host's
-- [vm] forward (rm.VMSettings.Forward), as the SQLite journal's step 0015
-- adds them.

ALTER TABLE policies ADD COLUMN IF NOT EXISTS vm_forward TEXT[] NOT NULL DEFAULT '{}';

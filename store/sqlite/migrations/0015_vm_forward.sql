-- 0015: the host services a VM policy's guests reach beyond the host's
-- [vm] forward (rm.VMSettings.Forward): a JSON array of "host:port"
-- strings, '' for none.

ALTER TABLE policies ADD COLUMN vm_forward TEXT NOT NULL DEFAULT '';

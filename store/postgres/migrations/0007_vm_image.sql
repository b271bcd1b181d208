-- 0007: a VM policy's image directory (the vm backend); '' for others, as
-- the SQLite journal's step 0010 adds it.

ALTER TABLE policies ADD COLUMN vm_image TEXT NOT NULL DEFAULT '';

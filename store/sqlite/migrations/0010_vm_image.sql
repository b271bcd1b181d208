-- 0010: a VM policy's image directory (the vm backend); '' for others.

ALTER TABLE policies ADD COLUMN vm_image TEXT NOT NULL DEFAULT '';

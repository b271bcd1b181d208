-- 0004: a policy's cap on warm spares (policies written before it keep
-- one, the front ends' default) and a container policy's settings (image,
-- CPU limit, network, the environment names and volumes passed to each
-- container), as the SQLite journal's steps 0005 and 0007 add them.

ALTER TABLE policies ADD COLUMN spare INTEGER NOT NULL DEFAULT 1 CHECK (spare >= 0);
ALTER TABLE policies ADD COLUMN container_image TEXT NOT NULL DEFAULT '';
ALTER TABLE policies ADD COLUMN container_cpus DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE policies ADD COLUMN container_network TEXT NOT NULL DEFAULT '';
ALTER TABLE policies ADD COLUMN container_env TEXT[] NOT NULL DEFAULT '{}';
ALTER TABLE policies ADD COLUMN container_volumes TEXT[] NOT NULL DEFAULT '{}';

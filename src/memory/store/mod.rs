//! The memory database: `<workspace>/memory/memory.db`, SQLite in WAL mode with a busy
//! timeout, so `homebot memory` can read and forget while a gateway writes.
//!
//! Tables (migration 1): `memories` (the content), `scenes` (normalized unique key,
//! occurrences, origin), `scene_features` (weak-feature counts per scene),
//! `scene_memories` (links with a decaying strength) and `evidence` (single
//! occurrences waiting for a second). Scenes are an index: links go when a scene goes
//! (`ON DELETE CASCADE`), memories never do.
//!
//! Schema changes are numbered migrations applied in one transaction each and recorded
//! in `PRAGMA user_version`; a database from a newer homebot is refused, not guessed at.

pub(crate) mod index;
pub(crate) mod maintain;
pub(crate) mod scenes;

use crate::config::MemoryConfig;
use crate::memory::key::{KeyError, SceneKey};
use rusqlite::config::DbConfig;
use rusqlite::{params, Connection, OptionalExtension, Params, Row};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Pages (4 KiB) the write-ahead log may hold before it is folded into the file: what a
/// process opening the database replays at most.
pub const WAL_PAGES: u32 = 256;

/// Each entry moves the schema one version up.
const MIGRATIONS: &[&str] = &[r#"
CREATE TABLE memories (
    id          INTEGER PRIMARY KEY,
    content     TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    origin      TEXT NOT NULL
);
CREATE TABLE scenes (
    id          INTEGER PRIMARY KEY,
    key         TEXT NOT NULL UNIQUE,
    occurrences INTEGER NOT NULL,
    origin      TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    last_seen   INTEGER NOT NULL
);
CREATE TABLE scene_features (
    scene_id INTEGER NOT NULL REFERENCES scenes(id) ON DELETE CASCADE,
    feature  TEXT NOT NULL,
    count    INTEGER NOT NULL,
    PRIMARY KEY (scene_id, feature)
);
CREATE TABLE scene_memories (
    scene_id   INTEGER NOT NULL REFERENCES scenes(id) ON DELETE CASCADE,
    memory_id  INTEGER NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    strength   REAL NOT NULL,
    decayed_at INTEGER NOT NULL,
    last_used  INTEGER NOT NULL,
    PRIMARY KEY (scene_id, memory_id)
);
CREATE INDEX scene_memories_by_memory ON scene_memories(memory_id);
CREATE TABLE evidence (
    id       INTEGER PRIMARY KEY,
    key      TEXT NOT NULL,
    features TEXT NOT NULL,
    seen_at  INTEGER NOT NULL
);
CREATE INDEX evidence_by_key ON evidence(key, seen_at);
"#];

/// Evidence rows kept per key (the newest), and in all.
pub(super) const EVIDENCE_PER_KEY: i64 = 20;
pub(super) const EVIDENCE_TOTAL: i64 = 5000;
/// Features a scene's profile keeps (identity ones always; the rarest weak ones go).
pub(super) const FEATURES_PER_SCENE: i64 = 64;
/// Scenes one memory links to, at most.
pub(super) const LINKS_PER_MEMORY: usize = 4;

#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("memory database {path}: {source}")]
    Db {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("memory folder {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("memory database {path} has schema version {found}; this homebot knows up to {known}")]
    TooNew {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error("the memory is empty")]
    Empty,
    #[error("the memory is {chars} characters; the limit is {limit}")]
    TooLong { chars: usize, limit: usize },
    #[error("{0}")]
    Key(#[from] KeyError),
    #[error("the household already keeps {0} memories, the limit; forget some first (homebot memory forget ID)")]
    Full(usize),
    #[error("the household already has {0} scenes, the limit; name no new scene (leave `scene` empty) or forget old ones")]
    ScenesFull(usize),
    #[error("scene memory is not available: {0}")]
    Unavailable(String),
}

/// Counts for `homebot memory` and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    pub memories: i64,
    pub scenes: i64,
    pub evidence: i64,
}

pub struct Store {
    pub(super) conn: Connection,
    pub(super) path: PathBuf,
    pub(super) cfg: MemoryConfig,
}

/// Statements kept parsed per connection: the memory thread runs the same dozen or so
/// for every turn it observes, and parsing them again each time was most of its work.
const STATEMENT_CACHE: usize = 48;

/// Run `sql` through the connection's statement cache.
pub(super) fn exec(c: &Connection, sql: &str, p: impl Params) -> rusqlite::Result<usize> {
    c.prepare_cached(sql)?.execute(p)
}

/// One row of `sql`, through the connection's statement cache.
pub(super) fn row<T>(
    c: &Connection,
    sql: &str,
    p: impl Params,
    f: impl FnOnce(&Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    c.prepare_cached(sql)?.query_row(p, f)
}

impl Store {
    /// Open (creating and migrating) the database at `path`.
    pub fn open(path: &Path, cfg: MemoryConfig) -> Result<Self, MemoryError> {
        if let Some(dir) = path.parent() {
            crate::fsutil::create_private_dirs(dir).map_err(|source| MemoryError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        // created 0600 before SQLite sees it: its -wal and -shm files copy this mode
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(path)
                .map_err(|source| MemoryError::Io {
                    path: path.to_path_buf(),
                    source,
                })?;
        }
        let conn = Connection::open(path).map_err(|source| MemoryError::Db {
            path: path.to_path_buf(),
            source,
        })?;
        let mut store = Self {
            conn,
            path: path.to_path_buf(),
            cfg,
        };
        store.setup().map_err(|e| store.err(e))?;
        store.migrate()?;
        Ok(store)
    }

    pub(super) fn err(&self, source: rusqlite::Error) -> MemoryError {
        MemoryError::Db {
            path: self.path.clone(),
            source,
        }
    }

    fn setup(&self) -> rusqlite::Result<()> {
        self.conn.busy_timeout(Duration::from_secs(5))?;
        // every statement of a turn's observation and a commit stays parsed
        self.conn
            .set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        // and is not parsed again when a value is bound: without the planner's stability
        // guarantee SQLite re-prepares a statement whose plan a bound value might change
        // (a `LIMIT ?`, a parameter compared twice) — the trimming statements of every
        // observation were re-prepared at nearly every step, a third of this thread's CPU
        self.conn
            .set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
        self.conn
            .query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))?;
        // the write-ahead log is folded into the file once it holds WAL_PAGES pages (on
        // the memory thread, after a commit), not at close: a process that opens the
        // database replays at most that much, and a one-shot `homebot chat` does not pay
        // a checkpoint's fsyncs at its exit
        self.conn
            .set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
        self.conn.execute_batch(&format!(
            "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = {WAL_PAGES};"
        ))
    }

    fn migrate(&mut self) -> Result<(), MemoryError> {
        let version: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        let known = MIGRATIONS.len() as i64;
        if version > known {
            return Err(MemoryError::TooNew {
                path: self.path.clone(),
                found: version,
                known,
            });
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            let tx = self.conn.transaction().map_err(|e| MemoryError::Db {
                path: self.path.clone(),
                source: e,
            })?;
            tx.execute_batch(sql)
                .and_then(|_| tx.execute_batch(&format!("PRAGMA user_version = {}", i + 1)))
                .and_then(|_| tx.commit())
                .map_err(|e| MemoryError::Db {
                    path: self.path.clone(),
                    source: e,
                })?;
        }
        Ok(())
    }

    /// Changes when any connection (another process too) has committed since the last call.
    pub fn data_version(&self) -> i64 {
        row(&self.conn, "PRAGMA data_version", [], |r| r.get(0)).unwrap_or(0)
    }

    /// Keep `content` and link it to the scenes `keys` (created when missing: a memory
    /// needs an anchor, and committing it is the household saying the place matters).
    /// The same content again is the same memory, linked anew.
    pub fn commit(
        &mut self,
        content: &str,
        keys: &[SceneKey],
        origin: &str,
        now: i64,
    ) -> Result<i64, MemoryError> {
        let content = content.trim();
        if content.is_empty() {
            return Err(MemoryError::Empty);
        }
        let chars = content.chars().count();
        if chars > self.cfg.max_content_chars {
            return Err(MemoryError::TooLong {
                chars,
                limit: self.cfg.max_content_chars,
            });
        }
        let max = self.cfg.max_memories;
        let max_scenes = self.cfg.max_scenes;
        let path = self.path.clone();
        let db = |source| MemoryError::Db {
            path: path.clone(),
            source,
        };
        let tx = self.conn.transaction().map_err(db)?;
        let existing: Option<i64> = row(
            &tx,
            "SELECT id FROM memories WHERE content = ?1",
            [content],
            |r| r.get(0),
        )
        .optional()
        .map_err(db)?;
        let id = match existing {
            Some(id) => id,
            None => {
                let n: i64 =
                    row(&tx, "SELECT COUNT(*) FROM memories", [], |r| r.get(0)).map_err(db)?;
                if n as usize >= max {
                    return Err(MemoryError::Full(max));
                }
                exec(
                    &tx,
                    "INSERT INTO memories (content, created_at, origin) VALUES (?1, ?2, ?3)",
                    params![content, now, origin],
                )
                .map_err(db)?;
                tx.last_insert_rowid()
            }
        };
        for key in keys.iter().take(LINKS_PER_MEMORY) {
            let (exists, scenes): (bool, i64) = row(
                &tx,
                "SELECT EXISTS(SELECT 1 FROM scenes WHERE key = ?1), (SELECT COUNT(*) FROM scenes)",
                [key.as_str()],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(db)?;
            if !exists && scenes as usize >= max_scenes {
                return Err(MemoryError::ScenesFull(max_scenes));
            }
            exec(
                &tx,
                "INSERT INTO scenes (key, occurrences, origin, created_at, last_seen)
                 VALUES (?1, 0, 'commit', ?2, ?2) ON CONFLICT(key) DO NOTHING",
                params![key.as_str(), now],
            )
            .map_err(db)?;
            exec(
                &tx,
                "INSERT INTO scene_memories (scene_id, memory_id, strength, decayed_at, last_used)
                 SELECT id, ?2, 1.0, ?3, ?3 FROM scenes WHERE key = ?1
                 ON CONFLICT(scene_id, memory_id) DO UPDATE
                 SET strength = 1.0, decayed_at = ?3, last_used = ?3",
                params![key.as_str(), id, now],
            )
            .map_err(db)?;
        }
        tx.commit().map_err(db)?;
        Ok(id)
    }

    /// How many memories, scenes and pieces of evidence are kept.
    pub fn stats(&self) -> Result<Stats, MemoryError> {
        let n = |t: &str| -> Result<i64, MemoryError> {
            self.conn
                .query_row(&format!("SELECT COUNT(*) FROM {t}"), [], |r| r.get(0))
                .map_err(|e| self.err(e))
        };
        Ok(Stats {
            memories: n("memories")?,
            scenes: n("scenes")?,
            evidence: n("evidence")?,
        })
    }

    /// Remove one memory (and its links). Whether it existed.
    pub fn forget(&mut self, id: i64) -> Result<bool, MemoryError> {
        let n = self
            .conn
            .execute("DELETE FROM memories WHERE id = ?1", [id])
            .map_err(|e| self.err(e))?;
        Ok(n > 0)
    }

    /// Links used by a recall: full strength again.
    /// Begin one transaction for the background writes that follow ([`Store::observe`],
    /// [`Store::touch`], each a savepoint inside it) until [`Store::end_batch`]: under
    /// load the memory thread writes the turns that queued up with one commit instead of
    /// one each. Takes the write lock at once (another process may write the file too;
    /// the busy timeout applies). Nothing that answers a caller may run inside a batch.
    pub fn begin_batch(&mut self) -> Result<(), MemoryError> {
        self.conn
            .execute_batch("BEGIN IMMEDIATE")
            .map_err(|e| self.err(e))
    }

    /// Commit the batch begun by [`Store::begin_batch`]; on failure it is rolled back
    /// (background observations only: the error says so and the thread goes on).
    pub fn end_batch(&mut self) -> Result<(), MemoryError> {
        self.conn.execute_batch("COMMIT").map_err(|e| {
            let _ = self.conn.execute_batch("ROLLBACK");
            self.err(e)
        })
    }

    pub fn touch(&mut self, links: &[(i64, i64)], now: i64) -> Result<(), MemoryError> {
        let path = self.path.clone();
        let db = |source| MemoryError::Db {
            path: path.clone(),
            source,
        };
        let tx = self.conn.savepoint().map_err(db)?;
        for (scene, memory) in links {
            tx.execute(
                "UPDATE scene_memories SET strength = 1.0, decayed_at = ?3, last_used = ?3
                 WHERE scene_id = ?1 AND memory_id = ?2",
                params![scene, memory, now],
            )
            .map_err(db)?;
        }
        tx.commit().map_err(db)
    }
}

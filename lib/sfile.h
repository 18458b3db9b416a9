/* SPDX-License-Identifier: MIT */
/*
 * sfile.h: the structure file, one per binary (doc/struct-format.md): the static structure
 * that struct recovers (functions, inlined call sites, loops, source lines) as sorted
 * address-range tables, so that prof maps (build-id, offset) to a function, its inline chain,
 * its loop nest and a file:line with two binary searches.
 *
 * Chunks: MODL module identity, STRS string table, NODE scope tree, RNGS innermost scope of
 * every analysed address, LINE line map, DECL declarations of inlined functions (1.1), LTCH
 * latch lines of loops (1.3).  The reader validates every field and refuses bad
 * input with a message naming the file.
 */
#ifndef FATHOM_SFILE_H
#define FATHOM_SFILE_H

#include "chunkfile.h"

#define SFILE_MAGIC "FTHMSTRC"
#define SFILE_MAJOR 1
#define SFILE_MINOR 4

#define SFILE_CHUNK_MODULE CF_ID('M', 'O', 'D', 'L')
#define SFILE_CHUNK_STRINGS CF_ID('S', 'T', 'R', 'S')
#define SFILE_CHUNK_NODES CF_ID('N', 'O', 'D', 'E')
#define SFILE_CHUNK_RANGES CF_ID('R', 'N', 'G', 'S')
#define SFILE_CHUNK_LINES CF_ID('L', 'I', 'N', 'E')
#define SFILE_CHUNK_DECLS CF_ID('D', 'E', 'C', 'L')
#define SFILE_CHUNK_LATCHES CF_ID('L', 'T', 'C', 'H')
#define SFILE_CHUNK_BLOCKS CF_ID('B', 'L', 'K', 'S')

#define SFILE_NONE UINT32_MAX
#define SFILE_MAX_STRING (1u << 20)
#define SFILE_MAX_BUILD_ID 64

/* Scope kinds.  X(enum suffix, value, name in dumps) */
#define SFILE_KINDS(X) X(FUNCTION, 1, "function") X(INLINE, 2, "inline") X(LOOP, 3, "loop")
enum sfile_kind {
#define X(e, v, n) SFILE_##e = v,
	SFILE_KINDS(X)
#undef X
};

/* Node flags.  X(enum suffix, bit, name in dumps) */
#define SFILE_NODE_FLAGS(X)                                                                  \
	X(PLT, 0, "plt")		   /* FUNCTION: a PLT entry */                          \
	X(NO_DWARF, 1, "symbol-only")	   /* FUNCTION: known from the symbol table alone */    \
	X(CLONE, 2, "clone")		   /* FUNCTION: .constprop/.isra/.part/.cold of ORIGIN */ \
	X(IRREDUCIBLE, 3, "irreducible")   /* LOOP: entered at more than one block */          \
	X(UNRESOLVED_JUMP, 4, "unresolved-jump") /* FUNCTION: an indirect jump was not resolved */
enum sfile_node_flag {
#define X(e, b, n) SFILE_NODE_##e = 1u << b,
	SFILE_NODE_FLAGS(X)
#undef X
};

/* Module flags. */
#define SFILE_MODULE_FLAGS(X)                                                                \
	X(DWARF, 0, "dwarf")	/* DWARF was found (in the file or a separate debug file) */ \
	X(LINES, 1, "lines")	/* the line map is not empty */                              \
	X(LOOPS, 2, "loops")	/* the machine code was decoded and loops recovered */       \
	X(STRIPPED, 3, "stripped") /* no .symtab: functions come from .dynsym */
enum sfile_module_flag {
#define X(e, b, n) SFILE_MODULE_##e = 1u << b,
	SFILE_MODULE_FLAGS(X)
#undef X
};

/*
 * A scope.  Functions are roots; an inlined call site or a loop has a parent with a smaller
 * index.  String fields are indices into the string table or SFILE_NONE.
 */
struct sfile_node {
	uint8_t kind;	 /* enum sfile_kind */
	uint32_t parent; /* SFILE_NONE for functions */
	uint32_t name;	 /* FUNCTION and INLINE: the (callee) function's name */
	uint32_t symbol; /* FUNCTION: ELF symbol at the entry when it differs from NAME */
	uint32_t file;	 /* FUNCTION: declaration; INLINE: call site; LOOP: its statement's line */
	uint32_t line, column;
	uint32_t flags;	 /* enum sfile_node_flag */
	uint64_t addr;	 /* FUNCTION: entry; LOOP: first instruction of the header block */
	uint32_t origin; /* FUNCTION: the function this is a clone or part of, or SFILE_NONE */
	uint32_t entries; /* LOOP: number of entry blocks (more than 1: irreducible) */
	uint32_t decl_file, decl_line; /* INLINE: the inlined function's declaration (DECL) */
	/* LOOP: the line of its latch (its back edge or exit test, LTCH); SFILE_NONE, 0: unknown */
	uint32_t latch_file, latch_line, latch_column;
};

/* [LO, HI) belongs to NODE and to none of its descendants. */
struct sfile_range {
	uint64_t lo, hi;
	uint32_t node;
};

/* [LO, HI) comes from FILE:LINE:COLUMN (line 0: the compiler gave no line). */
struct sfile_line {
	uint64_t lo, hi;
	uint32_t file, line, column;
};

struct sfile {
	uint16_t major, minor; /* as read */
	char *path;	       /* owned: the binary analysed */
	char *debug_path;      /* owned: the file DWARF came from, or NULL */
	uint8_t *build_id;     /* owned, or NULL */
	uint32_t build_id_len;
	uint32_t machine;      /* ELF e_machine */
	uint32_t flags;	       /* enum sfile_module_flag */
	uint64_t text_bytes;   /* bytes of executable sections */
	uint32_t nstrings;
	char **strings; /* owned */
	uint32_t nnodes;
	struct sfile_node *nodes; /* owned */
	uint64_t nranges;
	struct sfile_range *ranges; /* owned, sorted, disjoint */
	uint64_t nlines;
	struct sfile_line *lines; /* owned, sorted, disjoint */
	/* The basic blocks of each loop, its own and not its inner loops' (NODE: the loop), sorted
	 * and disjoint; none in files before 1.4 */
	uint64_t nblocks;
	struct sfile_range *blocks; /* owned */
};

/* Write SF to PATH (created with O_EXCL, never through a link; removed again on failure).
 * LEVEL 0 stores. */
int sfile_write(const char *path, const struct sfile *sf, int level);
/* The same, to NAME in the directory DIRFD (AT_FDCWD: PATH); PATH names it in messages. */
int sfile_write_at(int dirfd, const char *name, const char *path, const struct sfile *sf,
		   int level);
/* Read and validate PATH into SF.  On failure SF is empty and the message names the file. */
int sfile_read(const char *path, struct sfile *sf);
/* sfile_read of the SIZE bytes of PATH at DATA (read by someone else); DATA NULL: the file. */
int sfile_read_memory(const char *path, const void *data, size_t size, struct sfile *sf);
void sfile_release(struct sfile *sf);

/* The innermost node that holds ADDR, or SFILE_NONE. */
uint32_t sfile_lookup(const struct sfile *sf, uint64_t addr);
/* The line row that holds ADDR, or NULL. */
const struct sfile_line *sfile_line_at(const struct sfile *sf, uint64_t addr);
/* "?" for SFILE_NONE. */
const char *sfile_str(const struct sfile *sf, uint32_t index);

/*
 * Append the structure as text to OUT: module > file > function > inline call sites > loops >
 * statements, each with its address ranges and file:line.
 */
struct buf;
void sfile_dump(const struct sfile *sf, struct buf *out);
const char *sfile_kind_name(unsigned kind);

#endif

package sqlstore

// Bulk is the statements over many rows where the fast path of one database
// has no equivalent in the other: PostgreSQL sends the rows as arrays in one
// statement (unnest) or COPY, SQLite runs one prepared statement per row in
// process, where a statement costs no round trip. The database's package
// implements them; each takes the transaction it runs in.
type Bulk interface {
}

// Package datasets reads and writes agentrace dataset directories (conversations,
// messages and turns as Parquet, plus a manifest) and assembles each client turn's
// request body by concatenating pre-serialized message fragments, salted as the
// reference client salts them.
package datasets

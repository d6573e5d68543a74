//! `stoat mcp`: the MCP server inside the binary (server: the stdio JSON-RPC loop; tools: the
//! tool table and argument structs; schemas: the tools' input and output schemas; guards:
//! agent_access, names, host paths, forbidden fields; rate: rate limits; clients: `mcp doctor`
//! and `mcp install`; jsonc: editing their JSON-with-comments configs). docs/mcp.md and docs/decisions/mcp.md say why.

pub mod clients;
pub mod guards;
pub mod jsonc;
pub mod rate;
pub mod schemas;
pub mod server;
pub mod tools;

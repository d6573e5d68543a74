"""Drives `stoat mcp` with the official MCP Python SDK's stdio client, end to end.

Usage: drive.py <stoat binary> <fixture JSON> [REVISION]. With REVISION the client asks for
that protocol revision instead of the SDK's newest (the SDK's handshake is otherwise
unchanged) and checks that the server speaks it: outputSchema and structuredContent only from
2025-06-18 on. The environment (HOME, STOAT_HOME, PATH, the fakes' script, STOAT_MCP_RATE...)
is passed to the server unchanged.

The caller (tests/cli/test_mcp_client.rs) has prepared the data root and names its parts in the
fixture: an observe VM (`observe_vm`), a stopped VM the agent may exec in (`exec_vm`, which
boots under the fake QEMU and whose ssh runs commands on this host), a local recipe (`recipe`,
printing `recipe_says`) that VM lists, its export directory (`export`) holding a file to send
(`send`), a host directory standing for the guest's side of copies (`guest_dir`), a project
directory (`project_dir`, project `project`, declarations `project_vms` key -> VM name), and
the alpine-virt image in isos/.

It calls every tool tools/list offers at least once with a successful result, and checks that
each result means what the call asked (start -> running, snapshot -> listed by the CLI,
forward -> the forward present, exec -> exit 0 and the expected stdout, copy_to then copy_from
-> the same bytes back, project_status -> the project's VMs...), beside the refusals
(access_denied, a path escape, rate_limited). It ends by checking that the tools called
successfully are exactly the tools listed: a new tool without a call here fails the run.
Prints one line per check and exits 1 on the first failure. The SDK itself checks every
successful result against the tool's outputSchema, so a result that breaks it fails the call.
"""

import asyncio
import json
import os
import subprocess
import sys

import mcp.client.session
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

# Revisions with structuredContent (and so outputSchema); older ones answer text alone.
STRUCTURED = ("2025-06-18", "2025-11-25")

# The tools that answered a success at least once.
SUCCEEDED = set()


def field(obj, snake, camel):
    """Reads a result attribute under the SDK's v2 (snake) or v1 (camel) name."""
    return getattr(obj, snake, None) if hasattr(obj, snake) else getattr(obj, camel, None)


def check(condition, what, detail=""):
    """Passes or ends the run; `detail` (text, or a result shown as JSON) explains a failure."""
    if not condition:
        detail = detail if isinstance(detail, str) else json.dumps(detail)
        print(f"FAIL {what} {detail}", flush=True)
        sys.exit(1)
    print(f"ok   {what}", flush=True)


async def call(session, tool, arguments):
    result = await session.call_tool(tool, arguments)
    structured = field(result, "structured_content", "structuredContent")
    text = json.loads(result.content[0].text)
    is_error = bool(field(result, "is_error", "isError"))
    if session.protocol_version not in STRUCTURED:
        check(structured is None, f"{tool}: no structured content before 2025-06-18")
    elif is_error:
        # The outputSchema describes success; a failure's {code, message} is the text alone.
        check(structured is None, f"{tool}: a failure carries no structured content")
    else:
        check(structured == text, f"{tool}: structured content equals its text")
    return is_error, text


async def expect_ok(session, tool, arguments):
    is_error, data = await call(session, tool, arguments)
    check(not is_error, f"{tool} {json.dumps(arguments)} succeeds", data)
    SUCCEEDED.add(tool)
    return data


async def expect_error(session, tool, arguments, code):
    is_error, data = await call(session, tool, arguments)
    check(is_error and data.get("code") == code, f"{tool} {json.dumps(arguments)} -> {code}", data)
    return data


def vm_names(listing):
    return sorted(v["name"] for v in listing["vms"])


def cli_json(binary, *args):
    """The data of `stoat --json ARGS`, run beside the server with the same environment."""
    run = subprocess.run([binary, "--json", *args], capture_output=True, env=dict(os.environ), cwd=os.environ["HOME"])
    result = json.loads(run.stdout.decode().strip().splitlines()[-1])
    check(run.returncode == 0 and result.get("ok") is True, f"stoat {' '.join(args)} succeeds", run.stdout.decode())
    return result["data"]


async def main(binary, fixture, revision):
    obs, ex = fixture["observe_vm"], fixture["exec_vm"]
    recipe = fixture["recipe"]
    export, guest = fixture["export"], fixture["guest_dir"]
    project_dir = fixture["project_dir"]
    project_vms = fixture["project_vms"]
    if revision:
        # The handshake asks for the newest revision the SDK knows; ask for this one.
        mcp.client.session.LATEST_HANDSHAKE_VERSION = revision
    params = StdioServerParameters(command=binary, args=["mcp"], env=dict(os.environ), cwd=os.environ["HOME"])
    async with stdio_client(params) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            version = field(init, "protocol_version", "protocolVersion")
            server = field(init, "server_info", "serverInfo")
            check(version in ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"), f"negotiated protocol {version}")
            if revision:
                check(version == revision, f"the server speaks the asked-for {revision}", version)
            check(server.name == "stoat", "server is stoat")

            listed = await session.list_tools()
            names = {tool.name for tool in listed.tools}
            check(len(listed.tools) == 27, f"27 tools listed ({len(listed.tools)})")
            for tool in listed.tools:
                schema = field(tool, "input_schema", "inputSchema")
                check(schema.get("additionalProperties") is False, f"{tool.name} schema is closed")
                # The SDK validates every successful call's structured content against this,
                # with no way to fetch a $ref: each schema must stand alone.
                output = field(tool, "output_schema", "outputSchema")
                if version in STRUCTURED:
                    check(output is not None and output.get("type") == "object", f"{tool.name} has an object outputSchema")
                else:
                    check(output is None, f"{tool.name} offers no outputSchema where no structured content follows")
            annotations = {t.name: t.annotations for t in listed.tools}
            check(field(annotations["list_vms"], "read_only_hint", "readOnlyHint") is True, "list_vms is read-only")
            check(field(annotations["destroy"], "destructive_hint", "destructiveHint") is True, "destroy is destructive")
            check(field(annotations["exec"], "open_world_hint", "openWorldHint") is True, "exec is open-world")

            # STOAT_MCP_RATE is 3/0.01 here: no tool is called more than three times, except
            # list_images at the end, whose fourth call is refused.

            # ---- host-wide reads, and the VMs the agent finds
            vms = await expect_ok(session, "list_vms", {})
            check(vm_names(vms) == [ex, obs], f"list_vms sees {ex} and {obs}", vms)
            status = await expect_ok(session, "vm_status", {"vm": obs})
            check(status["vm"]["agent_access"] == "observe", f"vm_status shows {obs}'s agent_access")
            logs = await expect_ok(session, "logs", {"vm": obs, "n": 10})
            check(logs["vm"] == obs and logs["which"] == "console", f"logs reads {obs}'s console log", logs)
            offered = await expect_ok(session, "list_recipes", {"os": "alpine"})
            check(recipe in [r["name"] for r in offered["recipes"]], f"list_recipes offers {recipe}", offered)
            checked = await expect_ok(session, "check_recipes", {"recipes": [recipe], "os": "alpine"})
            check(checked == {"applicable": True, "issues": []}, f"{recipe} is applicable on alpine", checked)
            checked = await expect_ok(session, "check_recipes", {"recipes": ["no-such-recipe"], "os": "alpine"})
            check(checked["applicable"] is False and checked["issues"], "an unknown recipe is an issue, not an error")

            # ---- the agent's own VM: create, change, forward, snapshot, restore, clone, destroy
            created = await expect_ok(
                session,
                "create",
                {
                    "name": "agentvm",
                    "image": "alpine-virt",
                    "mode": "disk",
                    "disk": "64M",
                    "ram_mb": 512,
                    "agent_access": "manage",
                },
            )
            check(created["vm"]["name"] == "agentvm" and created["vm"]["state"] == "stopped", "create made agentvm")
            check(created["vm"]["agent_access"] == "manage", "agentvm has the asked-for agent_access")
            updated = await expect_ok(session, "update", {"vm": "agentvm", "cpus": 2})
            check(updated["changed"] == ["cpus"] and updated["vm"]["cpus"] == 2, "update changed cpus")
            await expect_error(session, "update", {"vm": "agentvm", "share": "/etc"}, "access_denied")
            await expect_error(session, "update", {"vm": "agentvm", "agent_access": "exec"}, "access_denied")
            await expect_error(session, "create", {"name": "byo", "image": "/tmp/x.qcow2"}, "invalid_spec")

            forwards = await expect_ok(session, "forward", {"vm": "agentvm", "pairs": ["18080:80"]})
            check(forwards == {"forwards": [{"host_port": 18080, "guest_port": 80}]}, "forward added 18080:80", forwards)

            saved = await expect_ok(session, "snapshot", {"vm": "agentvm", "tag": "t1"})
            check(saved == {"vm": "agentvm", "tag": "t1", "action": "save"}, "snapshot saved t1", saved)
            listing = cli_json(binary, "snapshot", "agentvm")
            check([s["tag"] for s in listing["snapshots"]] == ["t1"], "the snapshot is listed", listing)
            restored = await expect_ok(session, "restore", {"vm": "agentvm", "tag": "t1"})
            check(restored == {"vm": "agentvm", "tag": "t1", "action": "restore"}, "restore went back to t1", restored)
            await expect_error(session, "restore", {"vm": "agentvm", "tag": "never-saved"}, "invalid_spec")

            cloned = await expect_ok(session, "clone", {"source": "agentvm", "name": "agentcopy"})
            check(cloned["source"] == "agentvm" and cloned["vm"]["name"] == "agentcopy", "clone made agentcopy", cloned)
            check(cloned["vm"]["state"] == "stopped" and cloned["vm"]["cpus"] == 2, "the clone is agentvm's stopped copy")
            waited = await expect_ok(session, "wait", {"vm": "agentvm", "until": "stopped", "timeout_seconds": 1})
            check(waited == {"healthy": True}, "wait sees agentvm stopped", waited)

            await expect_error(session, "exec", {"vm": obs, "command": ["id"]}, "access_denied")
            await expect_error(session, "exec", {"vm": "agentvm", "command": ["id"]}, "access_denied")
            await expect_error(session, "stop", {"vm": obs}, "access_denied")

            for name in ("agentcopy", "agentvm"):
                deleted = await expect_ok(session, "destroy", {"vm": name})
                check(deleted["deleted"] is True, f"destroy deleted {name}")
            vms = await expect_ok(session, "list_vms", {})
            check(vm_names(vms) == [ex, obs], "agentvm and agentcopy are gone", vms)

            # ---- the exec VM: refusals, then start, wait, copy both ways, exec, apply, stop
            await expect_error(
                session, "copy_from", {"vm": ex, "remote": "/etc/passwd", "local": "../../escape"}, "access_denied"
            )
            await expect_error(session, "copy_to", {"vm": ex, "local": "/etc/passwd", "remote": "/tmp/p"}, "access_denied")
            await expect_error(session, "copy_to", {"vm": ex, "local": "link-out", "remote": "/tmp/p"}, "access_denied")

            started = await expect_ok(session, "start", {"vm": ex})
            check(started["vm"]["name"] == ex and started["vm"]["state"] == "running", f"start booted {ex}", started)
            waited = await expect_ok(session, "wait", {"vm": ex, "until": "reachable", "timeout_seconds": 60})
            check(waited == {"healthy": True}, f"{ex} is reachable", waited)

            send = fixture["send"]
            with open(os.path.join(export, send), "rb") as sent:
                payload = sent.read()
            remote = os.path.join(guest, send)
            copied = await expect_ok(session, "copy_to", {"vm": ex, "local": send, "remote": remote})
            local = os.path.join(export, send)
            check(copied == {"vm": ex, "local": local, "remote": remote, "to_remote": True}, "copy_to sent the file", copied)
            ran = await expect_ok(session, "exec", {"vm": ex, "command": ["cat", remote]})
            check(ran["vm"] == ex and ran["exit_code"] == 0, "exec ran cat with exit 0", ran)
            check(ran.get("stdout") == payload.decode(), "exec's stdout is the file the guest received", ran)
            copied = await expect_ok(session, "copy_from", {"vm": ex, "remote": remote, "local": "back.txt"})
            back = os.path.join(export, "back.txt")
            answer = {"vm": ex, "local": back, "remote": remote, "to_remote": False}
            check(copied == answer, "copy_from fetched the file", copied)
            with open(back, "rb") as fetched:
                check(fetched.read() == payload, "copy_to then copy_from round-trips the bytes")

            applied = await expect_ok(session, "apply_recipes", {"vm": ex})
            details = {d["name"]: d for d in applied["recipes_detail"]}
            done = applied["vm"] == ex and details.get(recipe, {}).get("applied") is True
            check(done, f"apply_recipes applied {recipe}", applied)
            logs = await expect_ok(session, "logs", {"vm": ex, "which": "apply", "n": 0})
            check(fixture["recipe_says"] in logs["lines"], "the apply log holds the recipe's output", logs)

            stopped = await expect_ok(session, "stop", {"vm": ex})
            check(stopped["vm"]["name"] == ex and stopped["vm"]["state"] == "stopped", f"stop stopped {ex}", stopped)
            status = await expect_ok(session, "vm_status", {"vm": ex})
            check(status["vm"]["state"] == "stopped", f"vm_status sees {ex} stopped")

            # ---- the project: status, up, wait, apply, down
            where = {"dir": project_dir}
            declared = sorted(project_vms.items())
            status = await expect_ok(session, "project_status", where)
            listed_vms = sorted((v["key"], v["name"]) for v in status["vms"])
            same = status["project"] == fixture["project"] and listed_vms == declared
            check(same, "project_status lists the project's VMs", status)
            check(all("state" not in v for v in status["vms"]), "none of them exists yet", status)

            def all_ok(run, what):
                statuses = sorted((v["key"], v["name"], v["status"]) for v in run["vms"])
                want = [(key, name, "ok") for key, name in declared]
                check(run["project"] == fixture["project"] and statuses == want, what, run)

            all_ok(await expect_ok(session, "project_up", where), "project_up started every VM")
            all_ok(await expect_ok(session, "project_wait", where), "project_wait reached every VM")
            all_ok(await expect_ok(session, "project_apply", where), "project_apply applied every VM")
            status = await expect_ok(session, "project_status", where)
            check(all(v.get("state") == "running" for v in status["vms"]), "project_status sees them running", status)
            web = project_vms[sorted(project_vms)[0]]
            status = await expect_ok(session, "vm_status", {"vm": web})
            details = {d["name"]: d for d in status["vm"]["recipes_detail"]}
            check(details.get(recipe, {}).get("applied") is True, f"project_apply applied {recipe} on {web}", status)
            all_ok(await expect_ok(session, "project_down", where), "project_down stopped every VM")
            status = await expect_ok(session, "project_status", where)
            check(all(v.get("state") == "stopped" for v in status["vms"]), "project_status sees them stopped", status)

            # ---- host-wide: prune (a dry run), images, the rate limit, doctor
            pruned = await expect_ok(session, "prune", {})
            check(pruned["dry_run"] is True, "prune without apply is a dry run", pruned)
            vms = await expect_ok(session, "list_vms", {})
            check(vm_names(vms) == sorted([ex, obs, *project_vms.values()]), "the dry run deleted nothing", vms)
            for _ in range(3):
                images = await expect_ok(session, "list_images", {})
            check(any(i.get("downloaded") for i in images["images"]), "list_images sees the image in isos/", images)
            refused = await expect_error(session, "list_images", {}, "rate_limited")
            check(refused.get("retry_after_seconds", 0) >= 1, "rate_limited carries a retry hint")
            doctor = await expect_ok(session, "doctor", {})
            check(isinstance(doctor.get("checks"), list), "doctor answers its checks", doctor)

            missing, unlisted = sorted(names - SUCCEEDED), sorted(SUCCEEDED - names)
            check(SUCCEEDED == names, "every listed tool was called successfully", f"missing {missing}, unlisted {unlisted}")
    print("all MCP client checks passed", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], json.loads(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None))

/*
 * Copyright kenning-encounter developers. Licensed under the Apache License, Version 2.0.
 */
package dev.kenning.neo4jlauncher;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.neo4j.configuration.connectors.ConnectorPortRegister;
import org.neo4j.configuration.connectors.ConnectorType;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.driver.AuthTokens;
import org.neo4j.driver.Driver;
import org.neo4j.driver.GraphDatabase;
import org.neo4j.kernel.internal.GraphDatabaseAPI;
import org.neo4j.server.CommunityBootstrapper;
import org.neo4j.server.NeoBootstrapper;

/**
 * Runs a Neo4j Community server, with the Graph Data Science procedures loaded,
 * for the test suite. Started in the background by scripts/neo4j-test-server.
 *
 * <p>Arguments: {@code --home DIR --plugins DIR --password PW [--port N] [--pagecache SIZE]};
 * port 0 picks a free port; the page cache defaults to 256m. Config, data and logs live under the home directory. Once a
 * Bolt session with the password has run a small GDS projection and PageRank, the
 * Bolt URI is printed and written to {@code HOME/uri}. The JVM then serves until
 * SIGTERM, when Neo4j's own shutdown hook stops the server cleanly.
 */
public final class TestServer {

    /**
     * Logs in, projects a three-node graph from literal ids (no writes to the store),
     * runs PageRank on it and drops it: proves the procedures and their libraries work.
     */
    private static final String SELF_CHECK = """
            UNWIND [[0, 1], [1, 2], [2, 0]] AS edge
            WITH gds.graph.project('neo4j-launcher-self-check', edge[0], edge[1]) AS graph
            CALL gds.pageRank.stream(graph.graphName) YIELD score
            WITH graph.graphName AS name, count(score) AS ranked
            CALL gds.graph.drop(name) YIELD graphName
            RETURN gds.version() AS version, ranked""";

    private TestServer() {}

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = parseArgs(argv);
        Path home = Path.of(args.get("home")).toAbsolutePath();
        Path plugins = Path.of(args.get("plugins")).toAbsolutePath();
        int port = Integer.parseInt(args.getOrDefault("port", "7687"));
        String password = args.get("password");

        String pagecache = args.getOrDefault("pagecache", "256m");

        Path config = writeConfig(home, plugins, port, pagecache);
        Files.deleteIfExists(home.resolve("uri"));

        NeoBootstrapper server = new CommunityBootstrapper();
        int status = server.start(home, config, Map.of(), false, false);
        if (status != NeoBootstrapper.OK) {
            fail(server, "Neo4j did not start (status " + status + "); see " + home.resolve("logs"));
        }
        DatabaseManagementService dbms = server.getDatabaseManagementService();

        // A new store has neo4j/neo4j with a forced change; a kept one may have an
        // older password. Either way, make the requested password the current one.
        String passwordError = "";
        try {
            dbms.database("system").executeTransactionally(
                    "ALTER USER neo4j SET PASSWORD $pw CHANGE NOT REQUIRED", Map.of("pw", password));
        } catch (RuntimeException e) {
            // "same as the old password" is expected on a kept store
            passwordError = " (setting the password said: " + e.getMessage() + ")";
        }

        String uri = "bolt://" + boltAddress(dbms);
        try (Driver driver = GraphDatabase.driver(uri, AuthTokens.basic("neo4j", password))) {
            var record = driver.executableQuery(SELF_CHECK).execute().records().get(0);
            System.out.println("GDS " + record.get("version").asString() + " ranked "
                    + record.get("ranked").asLong() + " nodes over Bolt");
        } catch (RuntimeException e) {
            e.printStackTrace();
            fail(server, "Bolt self-check failed at " + uri + ": " + e.getMessage() + passwordError);
        }

        Path tmp = home.resolve("uri.tmp");
        Files.writeString(tmp, uri + "\n");
        Files.move(tmp, home.resolve("uri"), StandardCopyOption.ATOMIC_MOVE);
        System.out.println(uri);
        System.out.flush();
    }

    /** The Bolt address actually bound, which differs from the configured one for port 0. */
    private static String boltAddress(DatabaseManagementService dbms) {
        var api = (GraphDatabaseAPI) dbms.database("system");
        return api.getDependencyResolver()
                .resolveDependency(ConnectorPortRegister.class)
                .getLocalAddress(ConnectorType.BOLT)
                .toString();
    }

    private static Path writeConfig(Path home, Path plugins, int port, String pagecache)
            throws IOException {
        List<String> lines = List.of(
                "# Written by tools/neo4j-launcher at every start; edits are lost.",
                "server.default_listen_address=127.0.0.1",
                "server.default_advertised_address=127.0.0.1",
                "server.bolt.enabled=true",
                "server.bolt.listen_address=127.0.0.1:" + port,
                "server.bolt.tls_level=DISABLED",
                "server.http.enabled=false",
                "server.https.enabled=false",
                "dbms.security.auth_enabled=true",
                "dbms.usage_report.enabled=false",
                "server.directories.plugins=" + plugins,
                // GDS reaches into kernel internals, so its procedures must be unrestricted;
                // the allowlist keeps its default, which is every loaded procedure.
                "dbms.security.procedures.unrestricted=gds.*",
                // small footprint by default (CI machines have 2 cores); the script sets
                // the heap, and a larger page cache for a large benchmark memory
                "server.memory.pagecache.size=" + pagecache,
                // One transaction may not take the whole heap: without this, a read query
                // that builds a large list exhausts it and the JVM exits (seen in a test).
                // A quarter of the 1g heap: at half, the untracked share still exhausted it.
                "db.memory.transaction.max=256m",
                "db.tx_log.rotation.retention_policy=2 files",
                "server.logs.gc.enabled=false",
                // Every test empties the database and fills it again, so its counts always
                // differ from the ones a cached plan was made with: by default each
                // statement was planned again every 10 s, about a third of the server's
                // work in the suite. A plan made once serves these small databases.
                "dbms.cypher.statistics_divergence_threshold=1.0",
                "dbms.cypher.min_replan_interval=1h",
                // A test worker sends more distinct statements (texts and parameter types)
                // than the default 1,000 plans: the Neo4j contract tests alone filled it,
                // and a plan let go costs about 60 ms of server CPU to make again. A plan
                // holds about 45 KB of heap, so even 5,000 stay well inside the 1g.
                "server.memory.query_cache.per_db_cache_num_entries=5000",
                // stop in about a second instead of netty's default 2 x 5 s quiet period
                "internal.dbms.bolt.netty_server_shutdown_quiet_period=0");
        Path conf = home.resolve("conf").resolve("neo4j.conf");
        Files.createDirectories(conf.getParent());
        Files.write(conf, lines);
        return conf;
    }

    private static Map<String, String> parseArgs(String[] argv) {
        Map<String, String> args = new HashMap<>();
        for (int i = 0; i < argv.length; i += 2) {
            if (!argv[i].startsWith("--") || i + 1 == argv.length) {
                usage("expected --name value pairs, got " + argv[i]);
            }
            args.put(argv[i].substring(2), argv[i + 1]);
        }
        for (String required : List.of("home", "plugins", "password")) {
            if (!args.containsKey(required)) {
                usage("missing --" + required);
            }
        }
        return args;
    }

    private static void usage(String problem) {
        System.err.println(problem);
        System.err.println("usage: TestServer --home DIR --plugins DIR --password PW [--port N] [--pagecache SIZE]");
        System.exit(2);
    }

    private static void fail(NeoBootstrapper server, String message) {
        System.err.println(message);
        if (server.isRunning()) {
            server.stop();
        }
        System.exit(1);
    }
}

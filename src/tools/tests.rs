//! The tools' unit and property tests, and the harness other modules' tests share.

pub(crate) mod testing {
    //! Running a tool directly, as the loop would.

    use super::super::*;
    use std::sync::Mutex;

    /// Arbitrary JSON for property tests: scalars (numbers also as digit strings), and
    /// arrays and objects of them, with keys tools use among random ones.
    pub(crate) fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        use serde_json::json;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            any::<f64>().prop_map(|n| json!(n)),
            "\\PC{0,12}".prop_map(Value::String),
            "[0-9]{1,25}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(
                    prop_oneof![
                        Just("oldText".to_string()),
                        Just("newText".to_string()),
                        Just("op".to_string()),
                        Just("pos".to_string()),
                        Just("lines".to_string()),
                        "[a-z]{1,6}"
                    ],
                    inner,
                    0..4
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// As root, runs the unit test named `test` again as `nobody` (setpriv) and requires that
    /// it ran and passed; returns `true` then, and the caller returns. Root ignores file and
    /// directory permissions, so a test about them checks nothing as root (as in CI).
    pub(crate) fn rerun_unprivileged(test: &str) -> bool {
        if !nix::unistd::geteuid().is_root() {
            return false;
        }
        let out = std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(std::env::current_exe().unwrap())
            .args(["--exact", test, "--test-threads=1"])
            .output()
            .unwrap_or_else(|err| panic!("setpriv(1) (util-linux) is needed as root: {err}"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("test result: ok. 1 passed"),
            "the unprivileged run of {test} failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        true
    }

    pub(crate) struct Harness {
        pub dir: tempfile::TempDir,
        pub updates: Arc<Mutex<Vec<ToolResult>>>,
        pub ctx: ToolContext,
    }

    impl Harness {
        pub(crate) fn new() -> Self {
            let dir = tempfile::tempdir().expect("tempdir");
            let updates: Arc<Mutex<Vec<ToolResult>>> = Arc::default();
            let sink = updates.clone();
            let ctx = ToolContext {
                cwd: Arc::new(dir.path().to_path_buf()),
                call_id: std::sync::Arc::from(""),
                run: RunServices::detached(),
                progress: Arc::new(move |update| sink.lock().unwrap().push(update)),
                files: FileLocks::default(),
                leftovers: Leftovers::default(),
                bash: BashSettings::default(),
                policy: None,
                edit_scope: None,
            };
            Harness { dir, updates, ctx }
        }

        pub(crate) fn path(&self, rel: &str) -> PathBuf {
            self.dir.path().join(rel)
        }

        pub(crate) fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
            let path = self.path(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).unwrap();
            }
            std::fs::write(path, content).unwrap();
        }

        pub(crate) fn read(&self, rel: &str) -> String {
            std::fs::read_to_string(self.path(rel)).unwrap()
        }

        pub(crate) async fn run(
            &self,
            tool: &dyn Tool,
            args: Value,
        ) -> Result<ToolResult, ToolError> {
            tool.execute(args, self.ctx.clone()).await
        }

        /// The text of a successful call; panics with the error text otherwise.
        pub(crate) async fn ok(&self, tool: &dyn Tool, args: Value) -> String {
            match self.run(tool, args).await {
                Ok(result) => result.text(),
                Err(err) => panic!("tool failed: {err}"),
            }
        }

        /// The text of a failed call; panics when it succeeded.
        pub(crate) async fn err(&self, tool: &dyn Tool, args: Value) -> String {
            match self.run(tool, args).await {
                Ok(result) => panic!("tool succeeded: {}", result.text()),
                Err(err) => err.message,
            }
        }
    }
}

mod toolset {
    use super::super::*;
    use serde_json::json;

    #[test]
    fn defaults_exclude_opt_in_tools_and_allowlists_can_name_them() {
        let set = ToolSet::select(ToolSet::all_builtin(), None).unwrap();
        assert_eq!(set.names(), DEFAULT_TOOLS.to_vec());
        let allow = vec!["hashline_edit".to_string(), "read".to_string()];
        let set = ToolSet::select(ToolSet::all_builtin(), Some(&allow)).unwrap();
        assert_eq!(set.names(), vec!["read", "hashline_edit"]);
    }

    #[test]
    fn unknown_tool_names_are_listed_with_what_exists() {
        let allow = vec!["read".to_string(), "nope".to_string()];
        let err = ToolSet::select(ToolSet::all_builtin(), Some(&allow))
            .err()
            .unwrap();
        assert_eq!(err.unknown, ["nope"]);
        assert_eq!(
            err.to_string(),
            "unknown tool in --tools: nope. Available: read, write, edit, bash, grep, find, ls, hashline_edit"
        );
        let two = vec!["x".to_string(), "y".to_string()];
        assert_eq!(
            ToolSet::select(Vec::new(), Some(&two))
                .err()
                .unwrap()
                .to_string(),
            "unknown tools in --tools: x, y. Available: none"
        );
    }

    #[test]
    fn every_tool_schema_is_an_object_with_required_fields_declared() {
        for tool in ToolSet::all_builtin() {
            let schema = tool.parameters();
            assert_eq!(schema["type"], "object", "{}", tool.name());
            let props = schema["properties"].as_object().unwrap();
            for required in schema["required"].as_array().unwrap() {
                assert!(
                    props.contains_key(required.as_str().unwrap()),
                    "{}",
                    tool.name()
                );
            }
        }
    }

    #[test]
    fn validation_errors_name_the_tool_and_echo_the_arguments() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Params {
            path: String,
        }
        let err = parse_args::<Params>("read", &json!({"file": "x"}), |field| {
            format!("missing field `{field}`")
        })
        .unwrap_err();
        assert_eq!(
            err.message,
            "Validation failed for tool \"read\":\n  - missing field `path`\n\nReceived arguments:\n{\n  \"file\": \"x\"\n}"
        );
    }
}

mod props {
    //! Arbitrary arguments for every built-in tool parse or are rejected with a named reason,
    //! never panic, and never parse without a field the schema requires.

    use super::super::*;
    use proptest::prelude::*;
    use serde::de::DeserializeOwned;
    use serde_json::Map;

    use super::testing::json_value;

    /// An object using the tool's own parameter names, with arbitrary values.
    fn arguments(tool: &dyn Tool) -> impl Strategy<Value = Value> + use<> {
        let names: Vec<String> = tool.parameters()["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        proptest::collection::vec((proptest::sample::select(names), json_value()), 0..6)
            .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>()))
    }

    /// `args` parse exactly when serde accepts them; a refusal names the tool, the problem and
    /// the arguments received; arguments lacking a field the tool's schema requires never parse
    /// (`edit` is the exception: it also reads a legacy flat form, and checks `edits` after
    /// parsing).
    fn parses<A: DeserializeOwned>(tool: &dyn Tool, args: &Value) {
        let parsed = parse_args::<A>("t", args, |field| format!("missing {field}"));
        let accepted = serde_json::from_value::<A>(args.clone()).is_ok();
        assert_eq!(parsed.is_ok(), accepted, "{args}");
        if let Err(error) = parsed {
            let received = serde_json::to_string_pretty(args).unwrap_or_default();
            assert!(
                error
                    .message
                    .starts_with("Validation failed for tool \"t\":\n  - "),
                "{}",
                error.message
            );
            assert!(
                error
                    .message
                    .ends_with(&format!("\n\nReceived arguments:\n{received}")),
                "{}",
                error.message
            );
        }
        let parameters = tool.parameters();
        let required = parameters["required"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if tool.name() != "edit"
            && required
                .iter()
                .filter_map(Value::as_str)
                .any(|name| args.get(name).is_none())
        {
            assert!(
                !accepted,
                "{} accepted {args} without a required field",
                tool.name()
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        #[test]
        fn built_in_tool_arguments_parse_as_their_schema_says(
            read in arguments(&read::ReadTool),
            write in arguments(&write::WriteTool),
            edit in arguments(&edit::EditTool),
            bash in arguments(&bash::BashTool),
            grep in arguments(&grep::GrepTool),
            find in arguments(&find::FindTool),
            ls in arguments(&ls::LsTool),
            hashline in arguments(&hashline_edit::HashlineEditTool),
        ) {
            parses::<read::ReadArgs>(&read::ReadTool, &read);
            parses::<write::WriteArgs>(&write::WriteTool, &write);
            parses::<edit::EditArgs>(&edit::EditTool, &edit);
            parses::<bash::BashArgs>(&bash::BashTool, &bash);
            parses::<grep::GrepArgs>(&grep::GrepTool, &grep);
            parses::<find::FindArgs>(&find::FindTool, &find);
            parses::<ls::LsArgs>(&ls::LsTool, &ls);
            parses::<hashline_edit::HashlineEditArgs>(&hashline_edit::HashlineEditTool, &hashline);
        }
    }
}

mod command_env {
    use super::super::*;

    fn var(name: &str, value: Option<&str>) -> (String, Option<String>) {
        (name.to_string(), value.map(str::to_string))
    }

    #[test]
    fn a_calls_own_variables_come_after_the_runs_so_they_win() {
        let mut settings = BashSettings {
            env: Arc::from([var("PARENT", None), var("KEEP", Some("run"))]),
            ..BashSettings::default()
        };
        // Without changes of its own, a call's command gets the run's, unchanged.
        assert_eq!(
            settings.command_env().as_ref(),
            [var("PARENT", None), var("KEEP", Some("run"))]
        );
        settings.call_env = vec![var("PARENT", Some("req-1"))];
        assert_eq!(
            settings.command_env().as_ref(),
            [
                var("PARENT", None),
                var("KEEP", Some("run")),
                var("PARENT", Some("req-1"))
            ]
        );
        // The run's part is shared, not copied, by every call's context.
        let clone = settings.clone();
        assert!(Arc::ptr_eq(&clone.env, &settings.env));
    }
}

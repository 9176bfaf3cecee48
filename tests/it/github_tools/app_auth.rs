//! GitHub App authentication: minted, cached, refreshed and re-minted tokens.

use super::*;

/// Mints installation tokens after checking the JWT against the App's public key.
struct TokenEndpoint {
    public_pem: String,
    app_id: u64,
    minted: Arc<AtomicUsize>,
    lifetime: Duration,
}

impl Respond for TokenEndpoint {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let bearer = request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let jwt = bearer.trim_start_matches("Bearer ");
        let key =
            octocrab::jsonwebtoken::DecodingKey::from_rsa_pem(self.public_pem.as_bytes()).unwrap();
        let mut validation =
            octocrab::jsonwebtoken::Validation::new(octocrab::jsonwebtoken::Algorithm::RS256);
        // GitHub takes the App id as a number, which jsonwebtoken's `iss` check cannot read.
        validation.set_required_spec_claims(&["exp"]);
        match octocrab::jsonwebtoken::decode::<Value>(jwt, &key, &validation) {
            Ok(data) if data.claims["iss"] == json!(self.app_id) => {
                let iat = data.claims["iat"].as_u64().unwrap();
                let exp = data.claims["exp"].as_u64().unwrap();
                assert!(
                    exp - iat <= 600,
                    "GitHub refuses JWTs living over 10 minutes"
                );
                let n = self.minted.fetch_add(1, Ordering::SeqCst);
                let expires = std::time::SystemTime::now() + self.lifetime;
                ResponseTemplate::new(201).set_body_json(json!({
                    "token": format!("ghs_installation{n}"),
                    "expires_at": humantime::format_rfc3339_seconds(expires).to_string()
                }))
            }
            other => ResponseTemplate::new(401)
                .set_body_json(json!({"message": format!("bad JWT: {other:?}")})),
        }
    }
}

#[tokio::test]
async fn github_app_tokens_are_minted_at_the_api_base_cached_and_refreshed_before_expiry() {
    use rsa::pkcs1::{EncodeRsaPrivateKey, EncodeRsaPublicKey};
    let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).unwrap();
    let private_pem = key
        .to_pkcs1_pem(rsa::pkcs8::LineEnding::LF)
        .unwrap()
        .to_string();
    let public_pem = key
        .to_public_key()
        .to_pkcs1_pem(rsa::pkcs8::LineEnding::LF)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let pem_path = dir.path().join("app.pem");
    std::fs::write(&pem_path, &private_pem).unwrap();

    for (lifetime, expected_mints) in [
        (Duration::from_secs(3600), 1),
        (Duration::from_secs(240), 2),
    ] {
        let gh = setup_with(
            "read",
            &[
                ("GITHUB_APP_ID", "4242"),
                ("GITHUB_APP_PRIVATE_KEY_PATH", pem_path.to_str().unwrap()),
                ("GITHUB_APP_INSTALLATION_ID", "77"),
            ],
        )
        .await;
        let minted = Arc::new(AtomicUsize::new(0));
        Mock::given(method("POST"))
            .and(path("/app/installations/77/access_tokens"))
            .respond_with(TokenEndpoint {
                public_pem: public_pem.clone(),
                app_id: 4242,
                minted: minted.clone(),
                lifetime,
            })
            .mount(&gh.server)
            .await;
        Mock::given(method("GET"))
            .and(path("/repos/o/r"))
            .and(header("authorization", "Bearer ghs_installation0"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"full_name": "o/r"})))
            .mount(&gh.server)
            .await;
        Mock::given(method("GET"))
            .and(path("/repos/o/r"))
            .and(header("authorization", "Bearer ghs_installation1"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(json!({"full_name": "o/r (second token)"})),
            )
            .mount(&gh.server)
            .await;
        gh.ok("github_get_repository", json!({"owner": "o", "repo": "r"}))
            .await;
        gh.ok("github_get_repository", json!({"owner": "o", "repo": "r"}))
            .await;
        // A token within five minutes of expiry is replaced before use; a fresh one is reused.
        assert_eq!(
            minted.load(Ordering::SeqCst),
            expected_mints,
            "lifetime {lifetime:?}"
        );
    }
}

#[tokio::test]
async fn a_revoked_app_token_is_re_minted_once_on_401() {
    use rsa::pkcs1::{EncodeRsaPrivateKey, EncodeRsaPublicKey};
    let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let pem_path = dir.path().join("app.pem");
    std::fs::write(
        &pem_path,
        key.to_pkcs1_pem(rsa::pkcs8::LineEnding::LF)
            .unwrap()
            .as_bytes(),
    )
    .unwrap();
    let public_pem = key
        .to_public_key()
        .to_pkcs1_pem(rsa::pkcs8::LineEnding::LF)
        .unwrap();
    let gh = setup_with(
        "read",
        &[
            ("GITHUB_APP_ID", "1"),
            ("GITHUB_APP_PRIVATE_KEY_PATH", pem_path.to_str().unwrap()),
            ("GITHUB_APP_INSTALLATION_ID", "2"),
        ],
    )
    .await;
    let minted = Arc::new(AtomicUsize::new(0));
    Mock::given(method("POST"))
        .and(path("/app/installations/2/access_tokens"))
        .respond_with(TokenEndpoint {
            public_pem,
            app_id: 1,
            minted: minted.clone(),
            lifetime: Duration::from_secs(3600),
        })
        .mount(&gh.server)
        .await;
    Mock::given(method("GET"))
        .and(path("/repos/o/r"))
        .and(header("authorization", "Bearer ghs_installation0"))
        .respond_with(
            ResponseTemplate::new(401).set_body_json(json!({"message": "Bad credentials"})),
        )
        .mount(&gh.server)
        .await;
    Mock::given(method("GET"))
        .and(path("/repos/o/r"))
        .and(header("authorization", "Bearer ghs_installation1"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"full_name": "o/r"})))
        .mount(&gh.server)
        .await;
    assert_eq!(
        gh.ok("github_get_repository", json!({"owner": "o", "repo": "r"}))
            .await["full_name"],
        "o/r"
    );
    assert_eq!(minted.load(Ordering::SeqCst), 2);
}

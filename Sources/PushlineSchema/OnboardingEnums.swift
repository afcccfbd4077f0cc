/// The onboarding scenario a question belongs to (`pushline.onboarding.Scenario`).
///
/// The client styles its steps by it; a change tells the client that the server moved the
/// user, from sign-in to account recovery, say.
public enum Scenario: Int32, ProtoEnum {
  case unknown = 0
  case signIn = 1
  case signUp = 2
  case accountRecovery = 3
  case phoneVerification = 4

  public static let protoName = "pushline.onboarding.Scenario"

  public var name: String {
    switch self {
    case .unknown: "SCENARIO_UNKNOWN"
    case .signIn: "SIGN_IN"
    case .signUp: "SIGN_UP"
    case .accountRecovery: "ACCOUNT_RECOVERY"
    case .phoneVerification: "PHONE_VERIFICATION"
    }
  }
}

/// One unit of information the onboarding server can ask for (`pushline.onboarding.DataType`).
public enum DataType: Int32, ProtoEnum {
  case unknown = 0
  case phoneNumber = 1
  case phoneOTP = 2
  case email = 3
  case emailOTP = 4
  case password = 5
  case firstName = 6
  case lastName = 7
  case acceptTerms = 8
  case voiceOTP = 9
  case profilePhoto = 10

  public static let protoName = "pushline.onboarding.DataType"

  public var name: String {
    switch self {
    case .unknown: "DATA_TYPE_UNKNOWN"
    case .phoneNumber: "PHONE_NUMBER"
    case .phoneOTP: "PHONE_OTP"
    case .email: "EMAIL"
    case .emailOTP: "EMAIL_OTP"
    case .password: "PASSWORD"
    case .firstName: "FIRST_NAME"
    case .lastName: "LAST_NAME"
    case .acceptTerms: "ACCEPT_TERMS"
    case .voiceOTP: "VOICE_OTP"
    case .profilePhoto: "PROFILE_PHOTO"
    }
  }
}

/// How a client gathers a question's data types (`pushline.onboarding.CollectionMode`).
public enum CollectionMode: Int32, ProtoEnum {
  case unknown = 0
  /// One screen asks for every data type.
  case singleStep = 1
  /// One screen per data type; one answer is sent after the last.
  case sequence = 2

  public static let protoName = "pushline.onboarding.CollectionMode"

  public var name: String {
    switch self {
    case .unknown: "COLLECTION_MODE_UNKNOWN"
    case .singleStep: "SINGLE_STEP"
    case .sequence: "SEQUENCE"
    }
  }
}
